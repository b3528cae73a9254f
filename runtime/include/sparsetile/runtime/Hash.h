//===- Hash.h - SHA-256 and cache-key digests -------------------*- C++ -*-===//
//
// A small, dependency-free SHA-256. Cache keys and entry checksums use it:
// keys are shared between processes and machines through the disk cache, so a
// collision would silently load the wrong kernel, and a weak hash (FNV) is not
// acceptable there. SHA-256 of a few KB of PTX costs microseconds, far below
// any compile.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_HASH_H
#define SPARSETILE_RUNTIME_HASH_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace sparsetile {
namespace rt {

/// A 256-bit digest.
using Digest = std::array<uint8_t, 32>;

/// Incremental SHA-256 (FIPS 180-4).
class Sha256 {
public:
  Sha256();
  /// Feeds `size` bytes.
  void update(const void *data, size_t size);
  void update(const std::string &s) { update(s.data(), s.size()); }
  /// Finishes and returns the digest; the object must not be reused after.
  Digest finish();

  /// One-shot helper.
  static Digest hash(const void *data, size_t size);
  static Digest hash(const std::string &s) { return hash(s.data(), s.size()); }

private:
  void block(const uint8_t *p);
  uint32_t state[8];
  uint8_t buffer[64];
  size_t bufferLen = 0;
  uint64_t totalLen = 0;
};

/// Mixes `v` into the running in-memory hash `h` (boost's hash_combine,
/// 64-bit). For hash-table keys only; cache keys use KeyHasher.
inline void hashCombine(uint64_t &h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
}

/// Lower-case hex of a digest (64 characters).
std::string toHex(const Digest &d);

/// Builds an unambiguous digest over a sequence of typed fields. Each field is
/// written as a tag, its length and its bytes, so ("ab","c") and ("a","bc")
/// hash differently and adding a field can never alias an old key.
class KeyHasher {
public:
  KeyHasher &add(const char *tag, const std::string &value);
  KeyHasher &add(const char *tag, int64_t value);
  Digest finish() { return sha.finish(); }

private:
  Sha256 sha;
};

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_HASH_H
