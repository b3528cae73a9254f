//===- Log.h - What the JIT and the autotuner did, when asked -------*- C++ -*-===//
//
// A compile can take a second and an autotune several, with nothing on the
// screen; a cache that misses looks the same as one that hits. The runtime
// reports those events (a compile and its time, a cache hit from memory or
// disk, an autotune's candidates and choice) to one sink, when enabled:
//
//   SPARSETILE_LOG=1 (or "info")   compiles and autotune choices, on stderr
//   SPARSETILE_LOG=2 (or "debug")  also cache hits and every candidate's time
//
// setLogSink replaces stderr (the Python package forwards to `logging`, see
// sparsetile.set_log_level). Nothing is formatted while logging is off.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_LOG_H
#define SPARSETILE_RUNTIME_LOG_H

#include <string>

namespace sparsetile::rt {

enum class LogLevel : int { Off = 0, Info = 1, Debug = 2 };

/// Receives each message at `level`; `ctx` is what setLogSink was given.
using LogSink = void (*)(int level, const char *message, void *ctx);

/// Sends messages up to `level` to `sink` (nullptr: stderr). Replaces the
/// level SPARSETILE_LOG set.
void setLogSink(LogSink sink, void *ctx, LogLevel level);

/// Whether messages at `level` go anywhere: test it before building one.
bool logEnabled(LogLevel level);

/// Sends `message` at `level` (nothing when logEnabled(level) is false).
void logMessage(LogLevel level, const std::string &message);

} // namespace sparsetile::rt

#endif // SPARSETILE_RUNTIME_LOG_H
