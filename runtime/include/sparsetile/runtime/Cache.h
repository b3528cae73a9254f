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
// The directory is a trust boundary (a cubin in it is run as the user): it
// is created 0700, entries 0600, and a directory not the user's or writable
// by others is refused (memory only, with a warning). Entries are opened
// without following symlinks or blocking, and read no further than their
// header allows.
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
#include <sys/stat.h>
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
  /// All fields are hashed; `constants` in key order, `divisibleBy16` and
  /// `equalToOne` sorted.
  CompileOptions options;
  /// The arch the cubin is built for (normally equal to options.arch).
  std::string targetArch;
  std::string compilerVersion;  ///< sparsetile::version()
  std::string toolchainVersion; ///< sparsetile::toolchainVersion()
  std::string cudaVersion;      ///< nvJitLink version used for the cubin
};

/// The largest entry file read (cubins are a few MB; anything near this is
/// not an entry the cache wrote).
constexpr uint64_t kMaxEntryBytes = uint64_t(256) << 20;
/// The largest file readWholeFile reads by default (autotune records).
constexpr uint64_t kMaxSmallFileBytes = uint64_t(16) << 20;

/// Writes `bytes` to `directory`/`name` (creating the directory, and missing
/// parents, 0700) through a temporary file created 0600 with O_EXCL and
/// renamed into place, so readers never see a partial file. False on failure
/// (nothing is left behind).
bool writeFileAtomically(const std::string &directory, const std::string &name,
                         const std::string &bytes);
/// The whole file at `path`, if it is a regular file of this user's and at
/// most `maxBytes` long; opened without following a symlink or blocking on a
/// FIFO. False otherwise, or if it cannot be read.
bool readWholeFile(const std::string &path, std::string &bytes,
                   uint64_t maxBytes = kMaxSmallFileBytes);
/// Why a directory (as fstat describes it) must not hold cache entries: not
/// a directory, not this user's, or writable by group or others. Empty when
/// it may.
std::string untrustedDirectoryReason(const struct stat &st);

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
  ~KernelCache();
  KernelCache(const KernelCache &) = delete;
  KernelCache &operator=(const KernelCache &) = delete;

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
  /// The directory, if the disk level uses it (created 0700 if missing; not
  /// refused); else empty. Other files kept beside the entries (autotune
  /// records) go here.
  std::string trustedDirectory();
  /// Why the directory was refused (see untrustedDirectoryReason); empty if
  /// it was not. A refused directory is warned of once on stderr and never
  /// read or written: the cache works in memory only.
  std::string refusal() const;

private:
  std::shared_ptr<const CacheEntry> loadFromDisk(const CacheKey &key);
  void writeToDisk(const CacheKey &key, const CacheEntry &entry);
  /// The checked directory's descriptor, opening (and creating) it on first
  /// use; -1 when there is no usable disk level.
  int diskDirectory();

  CacheConfig config_;
  mutable std::mutex dirMutex_;
  int dirfd_ = -1;
  std::string refusal_;
  std::atomic<bool> refused_{false};
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
/// Reads and parses the entry file `name` in the directory `dirfd` (or a
/// path, with AT_FDCWD): opened O_NOFOLLOW | O_NONBLOCK, it must be a regular
/// file of this user's; its header is read and checked first, and the rest
/// only when the file's size is exactly what the header says and at most
/// kMaxEntryBytes. On failure `*why` is "absent" for a missing file, else the
/// reason it was rejected.
bool readEntryFile(int dirfd, const std::string &name, const CacheKey &key,
                   CacheEntry &out, std::string *why = nullptr);

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_CACHE_H
