//===- ExchangeLayout.h - Shared-memory layouts of exchanges ---*- C++ -*-===//
//
// Where an exchange through shared memory (Exchange.cpp) puts the elements of
// the tile it moves, and the layouts it chooses among. Plain C++ with no MLIR
// dependency, so that tests/compiler/ExchangeLayoutTest.cpp can check every
// candidate directly: each must place every element at its own aligned
// offset, and keep the vectors it promises whole.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSETILE_CONVERSION_TILETOGPU_EXCHANGELAYOUT_H
#define SPARSETILE_CONVERSION_TILETOGPU_EXCHANGELAYOUT_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sparsetile::detail {

/// A tile seen as rows x cols (cols its last dimension, a power of two) of
/// `bytes`-wide elements: rows `pitch` bytes apart and, with `chunk` set,
/// the row's chunk-byte pieces permuted by XOR with (row >> shift) & mask.
struct ExchangeLayout {
  int64_t rows = 1, cols = 1, bytes = 1;
  int64_t pitch = 0;
  int64_t chunk = 0, shift = 0, mask = 0;

  bool plain() const { return chunk == 0 && pitch == cols * bytes; }

  /// Byte offset of element (row, col).
  int64_t offset(int64_t row, int64_t col) const {
    int64_t byte = col * bytes;
    if (chunk)
      byte = ((byte / chunk) ^ ((row >> shift) & mask)) * chunk + byte % chunk;
    return row * pitch + byte;
  }

  /// The widest vector (a power of two up to `run`) of elements adjacent in
  /// a row, starting at a multiple of its width, that stays contiguous and
  /// aligned in this layout.
  int64_t vectorWidth(int64_t run) const {
    while (run > 1 &&
           (pitch % (run * bytes) != 0 || (chunk && run * bytes > chunk)))
      run /= 2;
    return run;
  }
};

/// The layouts an exchange of a rows x cols tile chooses among, the plain
/// row-major order first (it wins ties): XOR swizzles of the rows' 16-, 8-
/// and 4-byte chunks by each shift of the row below 7 (they keep rows
/// unpadded and chunk-sized vectors whole; the mask spans at most one
/// 128-byte bank line), then rows padded by 4, 8 and 16 bytes. One row: the
/// plain order alone.
inline std::vector<ExchangeLayout>
exchangeCandidates(int64_t rows, int64_t cols, int64_t bytes) {
  ExchangeLayout plain;
  plain.rows = rows;
  plain.cols = cols;
  plain.bytes = bytes;
  plain.pitch = cols * bytes;
  std::vector<ExchangeLayout> out{plain};
  if (rows < 2)
    return out;
  int64_t rowBytes = plain.pitch;
  for (int64_t chunk : {16, 8, 4}) {
    if (chunk < bytes || rowBytes / chunk < 2)
      continue;
    for (int64_t shift = 0; shift < 7 && (int64_t(1) << shift) < rows;
         ++shift) {
      ExchangeLayout l = plain;
      l.chunk = chunk;
      l.shift = shift;
      l.mask = std::min<int64_t>(rowBytes / chunk, 128 / chunk) - 1;
      out.push_back(l);
    }
  }
  for (int64_t pad : {4, 8, 16}) {
    if (pad % bytes)
      continue;
    ExchangeLayout l = plain;
    l.pitch = rowBytes + pad;
    out.push_back(l);
  }
  return out;
}

} // namespace sparsetile::detail

#endif // SPARSETILE_CONVERSION_TILETOGPU_EXCHANGELAYOUT_H
