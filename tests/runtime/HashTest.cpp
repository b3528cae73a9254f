//===- HashTest.cpp - SHA-256 and key hashing tests -----------------------===//
//
// Checks the SHA-256 against FIPS 180-4 test vectors (cache keys must be
// stable across processes and machines) and that KeyHasher fields cannot
// alias each other.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Hash.h"

#include <gtest/gtest.h>

using namespace sparsetile::rt;

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(toHex(Sha256::hash("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(toHex(Sha256::hash("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(toHex(Sha256::hash(
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(toHex(Sha256::hash(million)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalMatchesOneShot) {
  std::string s;
  for (int i = 0; i < 1000; ++i)
    s += char(i * 7);
  for (size_t split : {0ul, 1ul, 55ul, 56ul, 63ul, 64ul, 65ul, 500ul}) {
    Sha256 h;
    h.update(s.data(), split);
    h.update(s.data() + split, s.size() - split);
    EXPECT_EQ(h.finish(), Sha256::hash(s)) << "split " << split;
  }
}

TEST(KeyHasher, FieldsDoNotAlias) {
  Digest a = KeyHasher().add("x", "ab").add("y", "c").finish();
  Digest b = KeyHasher().add("x", "a").add("y", "bc").finish();
  Digest c = KeyHasher().add("x", "ab").add("y", "c").finish();
  EXPECT_NE(a, b);
  EXPECT_EQ(a, c);
  EXPECT_NE(KeyHasher().add("x", "1").finish(),
            KeyHasher().add("y", "1").finish());
}
