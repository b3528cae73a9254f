//===- Log.cpp - The runtime's log sink (Log.h) ---------------------------===//

#include "sparsetile/runtime/Log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sparsetile::rt {

namespace {

/// SPARSETILE_LOG: "1"/"info", "2"/"debug"; anything else is off.
int levelFromEnvironment() {
  const char *v = std::getenv("SPARSETILE_LOG");
  if (!v)
    return 0;
  if (!std::strcmp(v, "1") || !std::strcmp(v, "info"))
    return 1;
  if (!std::strcmp(v, "2") || !std::strcmp(v, "debug"))
    return 2;
  return 0;
}

std::atomic<int> level{levelFromEnvironment()};
std::mutex mutex; // Guards sink and ctx, and keeps lines whole.
LogSink sink = nullptr;
void *sinkCtx = nullptr;

} // namespace

void setLogSink(LogSink s, void *ctx, LogLevel l) {
  std::lock_guard<std::mutex> lock(mutex);
  sink = s;
  sinkCtx = ctx;
  level.store(int(l), std::memory_order_relaxed);
}

bool logEnabled(LogLevel l) {
  return int(l) <= level.load(std::memory_order_relaxed) && l != LogLevel::Off;
}

void logMessage(LogLevel l, const std::string &message) {
  if (!logEnabled(l))
    return;
  std::lock_guard<std::mutex> lock(mutex);
  if (sink)
    sink(int(l), message.c_str(), sinkCtx);
  else
    std::fprintf(stderr, "sparsetile: %s\n", message.c_str());
}

} // namespace sparsetile::rt
