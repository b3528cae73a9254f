//===- Cache.cpp - The kernel cache: memory map + on-disk directory -------===//
//
// Implements cache keys, the entry file format and the two cache levels.
// File format (all integers little-endian):
//
//   0   8  magic "STKCACHE"
//   8   4  format version
//   12  4  reserved (0)
//   16  32 key digest (an entry renamed to the wrong name is rejected)
//   48  8  metadata length
//   56  8  PTX length
//   64  8  cubin length
//   72  32 SHA-256 of the payload
//   104    payload: metadata | PTX | cubin
//
// Writes go to "<dir>/.tmp-<key>-<pid>-<random>" and are rename()d to
// "<dir>/<key>.stk", which is atomic within a file system.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Cache.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;

namespace {

const char kMagic[8] = {'S', 'T', 'K', 'C', 'A', 'C', 'H', 'E'};
// 2: descriptors, dynamic shared memory; 3: clusters; 4: TMA box swizzle.
const uint32_t kFormatVersion = 5;
const size_t kHeaderSize = 104;

void putU32(std::string &s, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s.push_back(char(v >> (8 * i)));
}
void putU64(std::string &s, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s.push_back(char(v >> (8 * i)));
}
uint64_t getLE(const std::string &s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= uint64_t(uint8_t(s[at + i])) << (8 * i);
  return v;
}
void putString(std::string &s, const std::string &v) {
  putU32(s, uint32_t(v.size()));
  s += v;
}

/// Bounds-checked reader for the metadata block; any overrun marks it bad.
struct Reader {
  const std::string &s;
  size_t pos = 0;
  bool ok = true;
  uint64_t u(int bytes) {
    if (!ok || s.size() - pos < size_t(bytes)) {
      ok = false;
      return 0;
    }
    uint64_t v = getLE(s, pos, bytes);
    pos += bytes;
    return v;
  }
  std::string str() {
    uint64_t n = u(4);
    if (!ok || s.size() - pos < n) {
      ok = false;
      return {};
    }
    std::string v = s.substr(pos, n);
    pos += n;
    return v;
  }
  bool flag() {
    uint64_t v = u(1);
    if (v > 1)
      ok = false;
    return v == 1;
  }
};

std::string serializeMetadata(const CompiledKernel &k) {
  std::string s;
  putString(s, k.name);
  putString(s, k.arch);
  putU32(s, uint32_t(k.numThreads));
  putU32(s, uint32_t(k.sharedBytes));
  putU32(s, uint32_t(k.dynamicSharedBytes));
  putU32(s, uint32_t(k.params.size()));
  for (const KernelParam &p : k.params) {
    putString(s, p.name);
    s.push_back(char(p.isPointer));
    s.push_back(char(p.isDescriptor));
    s.push_back(char(p.dtype));
    s.push_back(char(p.divisibleBy16));
    putU32(s, uint32_t(p.boxRows));
    putU32(s, uint32_t(p.boxCols));
    putU32(s, uint32_t(p.boxSwizzle));
    s.push_back(char(p.tmaStore));
  }
  s.push_back(char(k.persistent));
  putU32(s, uint32_t(k.clusterSize));
  return s;
}

bool parseMetadata(const std::string &s, CompiledKernel &k) {
  Reader r{s};
  k.name = r.str();
  k.arch = r.str();
  k.numThreads = int(int32_t(r.u(4)));
  k.sharedBytes = int(int32_t(r.u(4)));
  k.dynamicSharedBytes = int(int32_t(r.u(4)));
  uint64_t n = r.u(4);
  if (!r.ok || n > s.size()) // Each param takes > 1 byte: bounds n cheaply.
    return false;
  k.params.clear();
  for (uint64_t i = 0; i < n && r.ok; ++i) {
    KernelParam p;
    p.name = r.str();
    p.isPointer = r.flag();
    p.isDescriptor = r.flag();
    uint64_t dt = r.u(1);
    if (dt > uint64_t(kLastDType))
      return false;
    p.dtype = DType(dt);
    p.divisibleBy16 = r.flag();
    p.boxRows = int(int32_t(r.u(4)));
    p.boxCols = int(int32_t(r.u(4)));
    p.boxSwizzle = int(int32_t(r.u(4)));
    p.tmaStore = r.flag();
    if (p.boxRows < 0 || p.boxCols < 0 ||
        (p.boxSwizzle != 0 && p.boxSwizzle != 64 && p.boxSwizzle != 128))
      return false;
    k.params.push_back(p);
  }
  k.persistent = r.flag();
  k.clusterSize = int(int32_t(r.u(4)));
  return r.ok && r.pos == s.size() && !k.name.empty() && k.numThreads >= 0 &&
         k.clusterSize >= 1 && k.clusterSize <= 16 &&
         k.sharedBytes >= 0 && k.dynamicSharedBytes >= 0;
}

void hashParams(KeyHasher &h, const std::vector<KernelParam> &params) {
  h.add("params", int64_t(params.size()));
  for (const KernelParam &p : params) {
    h.add("param.name", p.name);
    h.add("param.isPointer", int64_t(p.isPointer));
    h.add("param.isDescriptor", int64_t(p.isDescriptor));
    h.add("param.dtype", int64_t(p.dtype));
    h.add("param.divisibleBy16", int64_t(p.divisibleBy16));
  }
}

std::string envOrEmpty(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

} // namespace

//===----------------------------------------------------------------------===//
// Keys
//===----------------------------------------------------------------------===//

CacheKey sparsetile::rt::makeKernelKey(const KernelKeyInputs &in) {
  KeyHasher h;
  h.add("kind", "tile-kernel");
  h.add("source", in.source);
  h.add("kernelName", in.kernelName);
  // std::map iterates in key order, so constants are hashed sorted.
  h.add("constants", int64_t(in.options.constants.size()));
  for (const auto &c : in.options.constants) {
    h.add("constant.name", c.first);
    h.add("constant.value", c.second);
  }
  // Imported files are part of the program text.
  h.add("imports", int64_t(in.options.importedSources.size()));
  for (const auto &[path, text] : in.options.importedSources) {
    h.add("import.path", path);
    h.add("import.text", text);
  }
  std::vector<std::string> div = in.options.divisibleBy16;
  std::sort(div.begin(), div.end());
  div.erase(std::unique(div.begin(), div.end()), div.end());
  h.add("divisibleBy16", int64_t(div.size()));
  for (const std::string &d : div)
    h.add("divisibleBy16.name", d);
  CodegenOptions::forEachField([&](const char *name, auto field) {
    std::string tag = std::string("options.") + name;
    h.add(tag.c_str(), in.options.*field);
  });
  h.add("targetArch", in.targetArch);
  h.add("compilerVersion", in.compilerVersion);
  h.add("toolchainVersion", in.toolchainVersion);
  h.add("cudaVersion", in.cudaVersion);
  h.add("formatVersion", int64_t(kFormatVersion));
  return CacheKey{h.finish()};
}

CacheKey sparsetile::rt::makeCudaKey(const CudaKeyInputs &in) {
  KeyHasher h;
  h.add("kind", "cuda-kernel");
  h.add("source", in.source);
  h.add("entryName", in.entryName);
  hashParams(h, in.params);
  h.add("numThreads", int64_t(in.numThreads));
  h.add("nvrtcOptions", int64_t(in.nvrtcOptions.size()));
  for (const std::string &o : in.nvrtcOptions)
    h.add("nvrtcOption", o);
  h.add("targetArch", in.targetArch);
  h.add("nvrtcVersion", in.nvrtcVersion);
  h.add("cudaVersion", in.cudaVersion);
  h.add("formatVersion", int64_t(kFormatVersion));
  return CacheKey{h.finish()};
}

//===----------------------------------------------------------------------===//
// Entry format
//===----------------------------------------------------------------------===//

std::string sparsetile::rt::serializeEntry(const CacheKey &key,
                                           const CacheEntry &entry) {
  CompiledKernel meta = entry.kernel;
  meta.ptx.clear(); // Stored as its own section.
  std::string metaBytes = serializeMetadata(meta);
  Sha256 sha;
  sha.update(metaBytes);
  sha.update(entry.kernel.ptx);
  sha.update(entry.cubin);
  Digest sum = sha.finish();

  std::string out(kMagic, sizeof(kMagic));
  putU32(out, kFormatVersion);
  putU32(out, 0);
  out.append(reinterpret_cast<const char *>(key.digest.data()), 32);
  putU64(out, metaBytes.size());
  putU64(out, entry.kernel.ptx.size());
  putU64(out, entry.cubin.size());
  out.append(reinterpret_cast<const char *>(sum.data()), 32);
  out.reserve(out.size() + metaBytes.size() + entry.kernel.ptx.size() +
              entry.cubin.size());
  out += metaBytes;
  out += entry.kernel.ptx;
  out += entry.cubin;
  return out;
}

bool sparsetile::rt::deserializeEntry(const std::string &bytes,
                                      const CacheKey &key, CacheEntry &out,
                                      std::string *why) {
  auto fail = [&](const char *reason) {
    if (why)
      *why = reason;
    return false;
  };
  if (bytes.size() < kHeaderSize)
    return fail("truncated header");
  if (bytes.compare(0, 8, kMagic, 8) != 0)
    return fail("bad magic");
  if (getLE(bytes, 8, 4) != kFormatVersion)
    return fail("unsupported format version");
  if (bytes.compare(16, 32, reinterpret_cast<const char *>(key.digest.data()),
                    32) != 0)
    return fail("key mismatch");
  uint64_t metaLen = getLE(bytes, 48, 8), ptxLen = getLE(bytes, 56, 8),
           cubinLen = getLE(bytes, 64, 8);
  uint64_t avail = bytes.size() - kHeaderSize;
  // Compare without overflow: lengths come from an untrusted file.
  if (metaLen > avail || ptxLen > avail - metaLen ||
      cubinLen != avail - metaLen - ptxLen)
    return fail("size mismatch");
  Digest sum = Sha256::hash(bytes.data() + kHeaderSize, avail);
  if (bytes.compare(72, 32, reinterpret_cast<const char *>(sum.data()), 32) !=
      0)
    return fail("checksum mismatch");
  CacheEntry e;
  if (!parseMetadata(bytes.substr(kHeaderSize, metaLen), e.kernel))
    return fail("unparsable metadata");
  e.kernel.ptx = bytes.substr(kHeaderSize + metaLen, ptxLen);
  e.cubin = bytes.substr(kHeaderSize + metaLen + ptxLen, cubinLen);
  out = std::move(e);
  return true;
}

//===----------------------------------------------------------------------===//
// KernelCache
//===----------------------------------------------------------------------===//

CacheConfig CacheConfig::fromEnvironment() {
  CacheConfig c;
  std::string disable = envOrEmpty("SPARSETILE_CACHE_DISABLE");
  c.enabled = disable.empty() || disable == "0";
  std::string dir = envOrEmpty("SPARSETILE_CACHE_DIR");
  if (dir.empty()) {
    std::string xdg = envOrEmpty("XDG_CACHE_HOME");
    std::string home = envOrEmpty("HOME");
    if (!xdg.empty())
      dir = xdg + "/sparsetile";
    else if (!home.empty())
      dir = home + "/.cache/sparsetile";
  }
  c.directory = dir;
  return c;
}

KernelCache::KernelCache(CacheConfig config) : config_(std::move(config)) {}

std::string KernelCache::entryPath(const CacheKey &key) const {
  return config_.directory + "/" + key.hex() + ".stk";
}

std::shared_ptr<const CacheEntry>
KernelCache::loadFromDisk(const CacheKey &key) {
  if (config_.directory.empty())
    return nullptr;
  std::string bytes;
  if (!readWholeFile(entryPath(key), bytes))
    return nullptr; // Absent (or unreadable: rebuilt and renamed over).
  auto entry = std::make_shared<CacheEntry>();
  if (!deserializeEntry(bytes, key, *entry)) {
    // Ignored; the rebuilt entry will be renamed over it.
    corrupt_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return entry;
}

bool sparsetile::rt::writeFileAtomically(const std::string &directory,
                                         const std::string &name,
                                         const std::string &bytes) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  // The random suffix keeps threads of one process apart as well.
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          uint64_t(getpid()) << 32);
  std::string tmp = directory + "/.tmp-" + name + "-" +
                    std::to_string(getpid()) + "-" + std::to_string(rng());
  FILE *f = std::fopen(tmp.c_str(), "wb");
  bool ok = f != nullptr;
  if (ok) {
    ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = (std::fclose(f) == 0) && ok;
  }
  if (ok)
    ok = std::rename(tmp.c_str(), (directory + "/" + name).c_str()) == 0;
  if (!ok)
    std::remove(tmp.c_str());
  return ok;
}

bool sparsetile::rt::readWholeFile(const std::string &path,
                                   std::string &bytes) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  bytes.clear();
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    bytes.append(buf, n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

void KernelCache::writeToDisk(const CacheKey &key, const CacheEntry &entry) {
  if (config_.directory.empty())
    return;
  if (!writeFileAtomically(config_.directory, key.hex() + ".stk",
                           serializeEntry(key, entry)))
    writeFailures_.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<const CacheEntry> KernelCache::lookup(const CacheKey &key) {
  if (!config_.enabled)
    return nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = memory_.find(key.digest);
    if (it != memory_.end()) {
      memoryHits_.fetch_add(1, std::memory_order_relaxed);
      return it->second;
    }
  }
  std::shared_ptr<const CacheEntry> e = loadFromDisk(key);
  if (!e)
    return nullptr;
  diskHits_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  return memory_.emplace(key.digest, e).first->second;
}

void KernelCache::store(const CacheKey &key,
                        std::shared_ptr<const CacheEntry> entry) {
  if (!config_.enabled || !entry)
    return;
  writeToDisk(key, *entry);
  std::lock_guard<std::mutex> lock(mutex_);
  memory_[key.digest] = std::move(entry);
}

std::shared_ptr<const CacheEntry>
KernelCache::getOrBuild(const CacheKey &key, const BuildFn &build) {
  if (auto e = lookup(key))
    return e;
  misses_.fetch_add(1, std::memory_order_relaxed);
  auto e = std::make_shared<const CacheEntry>(build());
  store(key, e);
  return e;
}

CacheStats KernelCache::stats() const {
  CacheStats s;
  s.memoryHits = memoryHits_.load();
  s.diskHits = diskHits_.load();
  s.misses = misses_.load();
  s.corruptEntries = corrupt_.load();
  s.diskWriteFailures = writeFailures_.load();
  return s;
}

void KernelCache::resetStats() {
  memoryHits_ = diskHits_ = misses_ = corrupt_ = writeFailures_ = 0;
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.clear();
}
