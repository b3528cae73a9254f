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
// Writes go to "<dir>/.tmp-<key>-<pid>-<random>" (created 0600, O_EXCL) and
// are rename()d to "<dir>/<key>.stk", which is atomic within a file system.
// The directory is created 0700 and used only if it is the user's and no one
// else can write it (see "Files" below).
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Cache.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;

namespace {

const char kMagic[8] = {'S', 'T', 'K', 'C', 'A', 'C', 'H', 'E'};
// 2: descriptors, dynamic shared memory; 3: clusters; 4: TMA box swizzle;
// 6: remarks, or equal-to-1 parameters (two branches that each took 6);
// 7: both.
const uint32_t kFormatVersion = 7;
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
    s.push_back(char(p.equalToOne));
    putU32(s, uint32_t(p.boxRows));
    putU32(s, uint32_t(p.boxCols));
    putU32(s, uint32_t(p.boxSwizzle));
    s.push_back(char(p.tmaStore));
  }
  s.push_back(char(k.persistent));
  putU32(s, uint32_t(k.clusterSize));
  putU32(s, uint32_t(k.remarks.size()));
  for (const Remark &m : k.remarks) {
    for (const std::string *f : {&m.kind, &m.message, &m.file, &m.text})
      putString(s, *f);
    putU32(s, uint32_t(m.line));
    putU32(s, uint32_t(m.col));
  }
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
    p.equalToOne = r.flag();
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
  uint64_t remarks = r.u(4);
  if (!r.ok || remarks > s.size())
    return false;
  k.remarks.clear();
  for (uint64_t i = 0; i < remarks && r.ok; ++i) {
    Remark m;
    for (std::string *f : {&m.kind, &m.message, &m.file, &m.text})
      *f = r.str();
    m.line = int(int32_t(r.u(4)));
    m.col = int(int32_t(r.u(4)));
    k.remarks.push_back(std::move(m));
  }
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
    h.add("param.equalToOne", int64_t(p.equalToOne));
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
  // Parameter-name sets, hashed sorted and without repeats: the order a
  // caller lists them in does not change the code.
  auto addNames = [&](const std::string &tag, std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    h.add(tag.c_str(), int64_t(names.size()));
    for (const std::string &n : names)
      h.add((tag + ".name").c_str(), n);
  };
  addNames("divisibleBy16", in.options.divisibleBy16);
  addNames("equalToOne", in.options.equalToOne);
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

namespace {

/// Checks the fixed header at the start of `bytes` (at least kHeaderSize
/// long) against `key` and an entry of `fileSize` bytes, and returns the
/// three section lengths. Shared by deserializeEntry and readEntryFile, which
/// calls it before it reads anything past the header.
bool parseHeader(const std::string &bytes, uint64_t fileSize,
                 const CacheKey &key, uint64_t &metaLen, uint64_t &ptxLen,
                 uint64_t &cubinLen, std::string *why) {
  auto fail = [&](const char *reason) {
    if (why)
      *why = reason;
    return false;
  };
  if (bytes.size() < kHeaderSize || fileSize < kHeaderSize)
    return fail("truncated header");
  if (bytes.compare(0, 8, kMagic, 8) != 0)
    return fail("bad magic");
  if (getLE(bytes, 8, 4) != kFormatVersion)
    return fail("unsupported format version");
  if (bytes.compare(16, 32, reinterpret_cast<const char *>(key.digest.data()),
                    32) != 0)
    return fail("key mismatch");
  metaLen = getLE(bytes, 48, 8);
  ptxLen = getLE(bytes, 56, 8);
  cubinLen = getLE(bytes, 64, 8);
  uint64_t avail = fileSize - kHeaderSize;
  // Compare without overflow: lengths come from an untrusted file.
  if (metaLen > avail || ptxLen > avail - metaLen ||
      cubinLen != avail - metaLen - ptxLen)
    return fail("size mismatch");
  return true;
}

} // namespace

bool sparsetile::rt::deserializeEntry(const std::string &bytes,
                                      const CacheKey &key, CacheEntry &out,
                                      std::string *why) {
  auto fail = [&](const char *reason) {
    if (why)
      *why = reason;
    return false;
  };
  uint64_t metaLen, ptxLen, cubinLen;
  if (!parseHeader(bytes, bytes.size(), key, metaLen, ptxLen, cubinLen, why))
    return false;
  uint64_t avail = bytes.size() - kHeaderSize;
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
// Files
//===----------------------------------------------------------------------===//
//
// The cache directory is a trust boundary: an entry's cubin is loaded and run
// as the user, and its SHA-256 is unkeyed (it detects corruption, not
// forgery). So the directory must be the user's own and writable by nobody
// else, and every file in it is opened without following a symlink, without
// blocking (a FIFO), checked to be a regular file of the user's, and read no
// further than its size and header allow.

namespace {

/// Reads exactly `n` bytes at `offset` (appended to `out`); false on an error
/// or a short read (the file shrank).
bool readAt(int fd, uint64_t offset, uint64_t n, std::string &out) {
  size_t start = out.size();
  out.resize(start + n);
  uint64_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd, &out[start + done], n - done, off_t(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      out.resize(start);
      return false;
    }
    done += uint64_t(got);
  }
  return true;
}

/// Opens `name` (relative to `dirfd`, or a path with AT_FDCWD) for reading as
/// a regular file owned by this user: no symlink is followed and a FIFO does
/// not block the open. Returns the descriptor and its size, or -1 with the
/// reason.
int openRegular(int dirfd, const std::string &name, uint64_t &size,
                std::string &why) {
  int fd = ::openat(dirfd, name.c_str(),
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = errno == ENOENT  ? "absent"
          : errno == ELOOP ? "is a symbolic link"
                           : std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "is not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    why = "is not owned by this user";
  } else {
    size = uint64_t(st.st_size);
    return fd;
  }
  ::close(fd);
  return -1;
}

/// Creates `dir` and any missing parents with mode 0700 (the umask can only
/// narrow it): kernels are private to their user unless shared on purpose.
bool makeDirectories(const std::string &dir) {
  if (dir.empty())
    return false;
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST)
    return true;
  if (errno != ENOENT)
    return false;
  size_t slash = dir.find_last_not_of('/');
  slash = slash == std::string::npos ? slash : dir.rfind('/', slash);
  if (slash == std::string::npos || slash == 0)
    return false;
  return makeDirectories(dir.substr(0, slash)) &&
         (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST);
}

/// Writes `bytes` to a new private file `tmp` in `dirfd` and renames it to
/// `name` there. No symlink is followed; O_EXCL refuses a planted file.
bool writeAtomicallyAt(int dirfd, const std::string &name,
                       const std::string &bytes) {
  // The random suffix keeps threads of one process apart as well.
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          uint64_t(getpid()) << 32);
  std::string tmp = ".tmp-" + name + "-" + std::to_string(getpid()) + "-" +
                    std::to_string(rng());
  int fd = ::openat(dirfd, tmp.c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return false;
  bool ok = true;
  for (size_t done = 0; ok && done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    done += ok ? size_t(n) : 0;
  }
  ok = (::close(fd) == 0) && ok;
  if (ok)
    ok = ::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) == 0;
  if (!ok)
    ::unlinkat(dirfd, tmp.c_str(), 0);
  return ok;
}

} // namespace

std::string sparsetile::rt::untrustedDirectoryReason(const struct stat &st) {
  if (!S_ISDIR(st.st_mode))
    return "it is not a directory";
  if (st.st_uid != ::geteuid())
    return "it is owned by uid " + std::to_string(st.st_uid) +
           ", not by this user (uid " + std::to_string(::geteuid()) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", unsigned(st.st_mode & 07777));
    return std::string("other users can write to it (mode ") + mode + ")";
  }
  return "";
}

bool sparsetile::rt::writeFileAtomically(const std::string &directory,
                                         const std::string &name,
                                         const std::string &bytes) {
  if (!makeDirectories(directory))
    return false;
  int dirfd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0)
    return false;
  bool ok = writeAtomicallyAt(dirfd, name, bytes);
  ::close(dirfd);
  return ok;
}

bool sparsetile::rt::readWholeFile(const std::string &path, std::string &bytes,
                                   uint64_t maxBytes) {
  uint64_t size = 0;
  std::string why;
  int fd = openRegular(AT_FDCWD, path, size, why);
  if (fd < 0)
    return false;
  bytes.clear();
  bool ok = size <= maxBytes && readAt(fd, 0, size, bytes);
  ::close(fd);
  return ok;
}

bool sparsetile::rt::readEntryFile(int dirfd, const std::string &name,
                                   const CacheKey &key, CacheEntry &out,
                                   std::string *why) {
  std::string reason;
  uint64_t size = 0;
  int fd = openRegular(dirfd, name, size, reason);
  if (fd < 0) {
    if (why)
      *why = reason;
    return false;
  }
  // The header first: it says how long the file must be, and nothing past it
  // is read unless the file is exactly that long and within the cap.
  std::string bytes;
  uint64_t metaLen = 0, ptxLen = 0, cubinLen = 0;
  bool ok = size >= kHeaderSize && readAt(fd, 0, kHeaderSize, bytes);
  if (!ok) {
    if (why)
      *why = "truncated header";
  } else if (!parseHeader(bytes, size, key, metaLen, ptxLen, cubinLen, why)) {
    ok = false;
  } else if (size > kMaxEntryBytes) {
    ok = false;
    if (why)
      *why = "entry too large";
  } else if (!readAt(fd, kHeaderSize, size - kHeaderSize, bytes)) {
    ok = false;
    if (why)
      *why = "truncated";
  }
  ::close(fd);
  return ok && deserializeEntry(bytes, key, out, why);
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

KernelCache::~KernelCache() {
  if (dirfd_ >= 0)
    ::close(dirfd_);
}

std::string KernelCache::entryPath(const CacheKey &key) const {
  return config_.directory + "/" + key.hex() + ".stk";
}

int KernelCache::diskDirectory() {
  // Not `enabled`: autotune records use the directory with the cache off.
  if (config_.directory.empty())
    return -1;
  std::lock_guard<std::mutex> lock(dirMutex_);
  if (dirfd_ >= 0 || !refusal_.empty())
    return dirfd_;
  // Not there (yet) or not creatable: no disk level now, tried again on the
  // next access (writes count as failures meanwhile).
  if (!makeDirectories(config_.directory))
    return -1;
  // Everything below goes through this descriptor, so the directory checked
  // is the one used even if the path is renamed or replaced later.
  int fd = ::open(config_.directory.c_str(),
                  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct stat st;
  std::string why = ::fstat(fd, &st) != 0 ? std::string(std::strerror(errno))
                                          : untrustedDirectoryReason(st);
  if (!why.empty()) {
    ::close(fd);
    refusal_ = why;
    refused_.store(true, std::memory_order_release);
    std::fprintf(stderr,
                 "sparsetile: warning: not using the kernel cache directory "
                 "'%s': %s. Kernels are cached in memory only; set "
                 "SPARSETILE_CACHE_DIR to a directory of your own that no one "
                 "else can write (README, \"Kernel cache\").\n",
                 config_.directory.c_str(), why.c_str());
    return -1;
  }
  dirfd_ = fd;
  return dirfd_;
}

std::string KernelCache::refusal() const {
  std::lock_guard<std::mutex> lock(dirMutex_);
  return refusal_;
}

std::string KernelCache::trustedDirectory() {
  return diskDirectory() >= 0 ? config_.directory : std::string();
}

std::shared_ptr<const CacheEntry>
KernelCache::loadFromDisk(const CacheKey &key) {
  int dirfd = diskDirectory();
  if (dirfd < 0)
    return nullptr;
  auto entry = std::make_shared<CacheEntry>();
  std::string why;
  if (!readEntryFile(dirfd, key.hex() + ".stk", key, *entry, &why)) {
    // Absent is a plain miss; anything else is ignored and counted, and the
    // rebuilt entry is renamed over it (a rename replaces a symlink or FIFO
    // itself, never what it points to).
    if (why != "absent")
      corrupt_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return entry;
}

void KernelCache::writeToDisk(const CacheKey &key, const CacheEntry &entry) {
  int dirfd = diskDirectory();
  if (dirfd < 0) {
    // A refused directory is not a failure: it was decided, and warned of.
    if (!config_.directory.empty() && !refused_.load(std::memory_order_acquire))
      writeFailures_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!writeAtomicallyAt(dirfd, key.hex() + ".stk", serializeEntry(key, entry)))
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
