//===- Cache.h - The kernel cache: memory map + on-disk directory -*- C++
//-*-===//
//
// Compiling a tile kernel costs milliseconds (DSL -> MLIR -> PTX) and the PTX
// -> cubin step more; a warm process must not pay either. The cache maps a
// SHA-256 key over *everything* that affects the machine code (source, kernel
// name, constants, every CompileOptions field, arch, compiler and toolchain
// versions, CUDA version) to an entry holding PTX, cubin and the kernel's
// metadata.
//
// Disk entries are written to a unique temporary file in the cache directory
// and rename()d into place, so any number of processes can share a directory:
// readers see either no file or a complete one, and concurrent writers of one
// key write identical bytes. Every entry carries a checksum; a corrupt or
// truncated file is detected, counted, ignored and overwritten by the rebuilt
// entry.
//
// The cache layer knows nothing about the tile compiler: the caller passes a
// build function. Tests inject a fake one; the JIT passes the real pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_CACHE_H
#define SPARSETILE_RUNTIME_CACHE_H

#include "sparsetile/Compiler.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/Hash.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace sparsetile {
namespace rt {

/// Hashes a digest for unordered containers (its first bytes are already
/// uniformly distributed).
struct DigestHash {
  size_t operator()(const Digest &d) const {
    size_t h;
    std::memcpy(&h, d.data(), sizeof(h));
    return h;
  }
};

/// What the cache stores per key.
struct CacheEntry {
  /// Metadata and PTX (`kernel.ptx`).
  CompiledKernel kernel;
  /// The assembled cubin for `kernel.arch`; may be empty (then the driver
  /// JIT-compiles the PTX at load).
  std::string cubin;
};

/// A cache key: the SHA-256 of the inputs.
struct CacheKey {
  Digest digest{};
  std::string hex() const { return toHex(digest); }
  bool operator==(const CacheKey &o) const { return digest == o.digest; }
  bool operator!=(const CacheKey &o) const { return !(*this == o); }
};

/// Everything that determines a tile kernel's machine code.
struct KernelKeyInputs {
  std::string source;
  std::string kernelName;
  /// All fields are hashed; `constants` in key order, `divisibleBy16` sorted.
  CompileOptions options;
  /// The arch the cubin is built for (normally equal to options.arch).
  std::string targetArch;
  std::string compilerVersion;  ///< sparsetile::version()
  std::string toolchainVersion; ///< sparsetile::toolchainVersion()
  std::string cudaVersion;      ///< nvJitLink version used for the cubin
};

/// Writes `bytes` to `directory`/`name` (creating the directory) through a
/// temporary file renamed into place, so readers never see a partial file.
/// False on failure (nothing is left behind).
bool writeFileAtomically(const std::string &directory, const std::string &name,
                         const std::string &bytes);
/// The whole file at `path`; false if it cannot be opened or read.
bool readWholeFile(const std::string &path, std::string &bytes);

/// The key of a tile kernel.
CacheKey makeKernelKey(const KernelKeyInputs &in);

/// Everything that determines an NVRTC kernel's machine code.
struct CudaKeyInputs {
  std::string source;
  std::string entryName;
  std::vector<KernelParam> params; ///< The declared signature.
  int numThreads = 0;
  std::vector<std::string> nvrtcOptions;
  std::string targetArch;
  std::string nvrtcVersion;
  std::string cudaVersion; ///< nvJitLink version
};

/// The key of an NVRTC kernel (distinct from every tile-kernel key).
CacheKey makeCudaKey(const CudaKeyInputs &in);

/// Counters for tests and benches.
struct CacheStats {
  uint64_t memoryHits = 0;
  uint64_t diskHits = 0;
  uint64_t misses = 0;         ///< Entries built.
  uint64_t corruptEntries = 0; ///< Disk files rejected.
  uint64_t diskWriteFailures = 0;
};

/// Where and whether to cache.
struct CacheConfig {
  /// Entry directory; empty disables the disk level.
  std::string directory;
  /// False bypasses the cache entirely (memory and disk).
  bool enabled = true;

  /// $SPARSETILE_CACHE_DIR, else $XDG_CACHE_HOME/sparsetile, else
  /// ~/.cache/sparsetile; SPARSETILE_CACHE_DISABLE=1 disables caching.
  static CacheConfig fromEnvironment();
};

/// The two-level cache. Thread-safe.
class KernelCache {
public:
  using BuildFn = std::function<CacheEntry()>;

  explicit KernelCache(CacheConfig config = CacheConfig::fromEnvironment());

  /// Memory, then disk, else `build()` (stored to both levels). Errors from
  /// `build` propagate; disk write failures are counted, not thrown (the
  /// cache is an optimization).
  std::shared_ptr<const CacheEntry> getOrBuild(const CacheKey &key,
                                               const BuildFn &build);
  /// Memory, then disk; nullptr when absent or invalid.
  std::shared_ptr<const CacheEntry> lookup(const CacheKey &key);
  /// Stores in memory and on disk.
  void store(const CacheKey &key, std::shared_ptr<const CacheEntry> entry);

  /// The entry's file (valid even if it does not exist).
  std::string entryPath(const CacheKey &key) const;
  CacheStats stats() const;
  void resetStats();
  /// Drops the memory level (the disk stays).
  void clearMemory();
  const CacheConfig &config() const { return config_; }

private:
  std::shared_ptr<const CacheEntry> loadFromDisk(const CacheKey &key);
  void writeToDisk(const CacheKey &key, const CacheEntry &entry);

  CacheConfig config_;
  mutable std::mutex mutex_;
  std::unordered_map<Digest, std::shared_ptr<const CacheEntry>, DigestHash>
      memory_;
  std::atomic<uint64_t> memoryHits_{0}, diskHits_{0}, misses_{0}, corrupt_{0},
      writeFailures_{0};
};

/// The on-disk format, exposed for tests. The header holds a magic, the
/// format version, the key, the three payload lengths and the SHA-256 of the
/// payload (metadata, PTX, cubin).
std::string serializeEntry(const CacheKey &key, const CacheEntry &entry);
/// Parses an entry file. Returns false, with the reason in `*why`, on a bad
/// magic or version, a key mismatch, a size mismatch, a checksum mismatch or
/// unparsable metadata.
bool deserializeEntry(const std::string &bytes, const CacheKey &key,
                      CacheEntry &out, std::string *why = nullptr);

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_CACHE_H
