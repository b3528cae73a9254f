// The shared-memory layouts an exchange chooses among (ExchangeLayout.h).
// A layout that put two elements at one offset would make a transpose
// silently wrong for whichever kernel the cost model handed it to, and the
// GPU tests reach only the layouts their shapes happen to pick. So every
// candidate, for every element width and a range of tile shapes, is checked
// here on the host:
//  - each element has its own offset, aligned to its width, inside
//    rows * pitch bytes;
//  - a vector that vectorWidth() allows (w adjacent elements starting at a
//    multiple of w) is contiguous and aligned to its size.
#include "Conversion/TileToGPU/ExchangeLayout.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using sparsetile::detail::exchangeCandidates;
using sparsetile::detail::ExchangeLayout;

namespace {

std::string describe(const ExchangeLayout &l) {
  return std::to_string(l.rows) + "x" + std::to_string(l.cols) + " of " +
         std::to_string(l.bytes) + " B, pitch " + std::to_string(l.pitch) +
         ", chunk " + std::to_string(l.chunk) + ", shift " +
         std::to_string(l.shift) + ", mask " + std::to_string(l.mask);
}

} // namespace

TEST(ExchangeLayout, EveryCandidateIsABijectionWithWholeVectors) {
  int layouts = 0;
  for (int64_t bytes : {1, 2, 4, 8})
    for (int64_t rows : {1, 2, 8, 32, 64, 128})
      for (int64_t cols : {1, 2, 8, 16, 32, 64, 256}) {
        std::vector<ExchangeLayout> all = exchangeCandidates(rows, cols, bytes);
        ASSERT_FALSE(all.empty());
        EXPECT_TRUE(all.front().plain()) << "the plain order comes first";
        for (const ExchangeLayout &l : all) {
          ++layouts;
          std::set<int64_t> seen;
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
              int64_t o = l.offset(r, c);
              ASSERT_EQ(o % bytes, 0) << describe(l) << " at " << r << "," << c;
              ASSERT_GE(o, 0) << describe(l);
              ASSERT_LE(o + bytes, rows * l.pitch) << describe(l);
              ASSERT_TRUE(seen.insert(o).second)
                  << describe(l) << ": two elements at " << o;
            }
          for (int64_t run = 1; run <= 16 && run <= cols; run *= 2) {
            int64_t w = l.vectorWidth(run);
            ASSERT_GE(w, 1);
            ASSERT_LE(w, run);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t c = 0; c + w <= cols; c += w) {
                int64_t o = l.offset(r, c);
                ASSERT_EQ(o % (w * bytes), 0)
                    << describe(l) << ": a " << w << "-vector misaligned";
                for (int64_t i = 1; i < w; ++i)
                  ASSERT_EQ(l.offset(r, c + i), o + i * bytes)
                      << describe(l) << ": a " << w << "-vector split";
              }
          }
        }
      }
  // Swizzles and paddings were generated, not just the plain order.
  EXPECT_GT(layouts, 4 * 6 * 7 * 4);
}

// The plain order is row-major and keeps every vector up to the row.
TEST(ExchangeLayout, PlainIsRowMajor) {
  ExchangeLayout l = exchangeCandidates(32, 64, 2).front();
  EXPECT_EQ(l.offset(0, 0), 0);
  EXPECT_EQ(l.offset(1, 0), 128);
  EXPECT_EQ(l.offset(3, 5), 3 * 128 + 10);
  EXPECT_EQ(l.vectorWidth(8), 8);
}

// A 16-byte swizzle keeps 16-byte vectors and moves a column's rows apart
// by whole chunks: rows 0 and 8 of column 0 (shift 3) land in different
// chunks, i.e. different banks.
TEST(ExchangeLayout, SwizzleSpreadsAColumnOverBanks) {
  for (const ExchangeLayout &l : exchangeCandidates(32, 64, 2))
    if (l.chunk == 16 && l.shift == 3) {
      EXPECT_EQ(l.vectorWidth(8), 8);
      EXPECT_NE((l.offset(0, 0) / 4) % 32, (l.offset(8, 0) / 4) % 32);
      return;
    }
  FAIL() << "no 16-byte swizzle with shift 3 for a [32, 64] bf16 tile";
}
