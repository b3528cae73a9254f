//===- Exchange.cpp - Moving a tile between layouts through shared memory ===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). When the threads that need a tile's elements are not the
// threads that hold them (a trans() or reshape() read at other coordinates,
// a reduction's result at another tile's rows), every thread writes what it
// holds to shared memory and reads what it needs back.
//
// Where each element sits in shared memory decides what that costs. A bank
// serves one 4-byte word per wavefront, so when the lanes of a warp read a
// column of a row-major tile (a transpose: every lane's element a whole row
// apart) they queue on a few banks: compress24's pass 1 read its transposed
// tiles at four wavefronts per load (bench/NOTES.md, "Exchanges in a
// conflict-free layout"). So the layout is chosen per exchange, at compile
// time, from the coordinates both sides touch in every thread. The
// candidates are the plain row-major order, XOR swizzles of the row's
// chunks by row bits, and padded rows (ExchangeLayout.h lists them). Each
// is costed by counting the wavefronts and instructions of every warp's
// accesses; the cheapest wins, the plain order on a tie. A side that holds
// runs of adjacent elements moves each run as one vector, where the layout
// keeps it contiguous and aligned.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <algorithm>

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

namespace {

/// Shared-memory wavefronts of one access by the lanes of a warp, at byte
/// addresses `addr`, `width` bytes each. Lanes are served in phases of 128
/// bytes (16-byte accesses 8 lanes a phase, 8-byte ones 16, narrower ones
/// all 32); in a phase a bank serves one 4-byte word per wavefront, and
/// lanes that name the same word share it.
int64_t wavefronts(ArrayRef<int64_t> addr, int64_t width) {
  size_t perPhase = width >= 16 ? 8 : width == 8 ? 16 : 32;
  int64_t total = 0;
  SmallVector<int64_t, 128> words;
  for (size_t p = 0; p < addr.size(); p += perPhase) {
    words.clear();
    for (size_t l = p; l < std::min(addr.size(), p + perPhase); ++l)
      for (int64_t w = addr[l] / 4; w <= (addr[l] + width - 1) / 4; ++w)
        words.push_back(w);
    llvm::sort(words);
    words.erase(std::unique(words.begin(), words.end()), words.end());
    int64_t perBank[32] = {};
    int64_t most = 0;
    for (int64_t w : words)
      most = std::max(most, ++perBank[w % 32]);
    total += most;
  }
  return total;
}

} // namespace

/// The layout for moving a `shape` tile of `bytes`-wide elements from
/// coordinates `from` (runs of `fromRun` adjacent elements per vector at
/// most) to `to` (runs of `toRun`): the candidate with the fewest
/// wavefronts over both sides. The plain row-major order when a side's
/// coordinates are not known per thread or the tile has one row.
ExchangeLayout Distributor::exchangeLayout(ArrayRef<int64_t> shape,
                                           int64_t bytes, const Coords &from,
                                           int64_t fromRun, const Coords &to,
                                           int64_t toRun) {
  int64_t cols = shape.empty() ? 1 : shape.back(), rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    rows *= shape[d];
  std::vector<ExchangeLayout> candidates =
      exchangeCandidates(rows, cols, bytes);
  const ExchangeLayout &plain = candidates.front();
  if (candidates.size() == 1)
    return plain;

  // Every slot's (row, col) in every thread, slot-major.
  struct Side {
    std::vector<std::pair<int64_t, int64_t>> at;
    size_t slots = 0;
    int64_t run = 1;
  };
  auto place = [&](const Coords &c, int64_t run) -> std::optional<Side> {
    Side s;
    s.slots = c.at.size();
    s.run = run;
    s.at.reserve(s.slots * size_t(numThreads));
    for (auto &slot : c.at) {
      SmallVector<const SmallVector<int32_t> *> dims;
      for (Value d : slot) {
        dims.push_back(perThread(d));
        if (!dims.back())
          return std::nullopt;
      }
      for (int64_t t = 0; t < numThreads; ++t) {
        int64_t row = 0;
        for (size_t d = 0; d + 1 < dims.size(); ++d)
          row = row * shape[d] + (*dims[d])[t];
        s.at.emplace_back(row, (*dims.back())[t]);
      }
    }
    return s;
  };
  std::optional<Side> w = place(from, fromRun), r = place(to, toRun);
  if (!w || !r)
    return plain;

  auto sideCost = [&](const Side &s, const ExchangeLayout &l) {
    int64_t width = l.vectorWidth(s.run), total = 0;
    SmallVector<int64_t, 32> addr;
    for (size_t slot = 0; slot < s.slots; slot += size_t(width))
      for (int64_t t0 = 0; t0 < numThreads; t0 += 32) {
        addr.clear();
        for (int64_t t = t0; t < std::min<int64_t>(numThreads, t0 + 32); ++t) {
          auto [row, col] = s.at[slot * size_t(numThreads) + size_t(t)];
          addr.push_back(l.offset(row, col));
        }
        // Each instruction also takes an issue slot in the memory pipe:
        // of two layouts with equal wavefronts, the one that moves wider
        // vectors wins.
        total += wavefronts(addr, width * bytes) + 1;
      }
    return total;
  };
  auto cost = [&](const ExchangeLayout &l) {
    return sideCost(*w, l) + sideCost(*r, l);
  };

  ExchangeLayout best = plain;
  int64_t bestCost = cost(plain);
  for (size_t i = 1; i < candidates.size(); ++i) {
    const ExchangeLayout &l = candidates[i];
    int64_t c = cost(l);
    if (c < bestCost) {
      best = l;
      bestCost = c;
    }
  }
  return best;
}

/// The shared-memory address of element `dims` of a `shape` tile stored in
/// layout `l`. The plain layout indexes elements, as gather always did.
Value Distributor::exchangeAddress(const ExchangeLayout &l,
                                   ArrayRef<Value> dims,
                                   ArrayRef<int64_t> shape, Type memElt) {
  if (l.plain())
    return smemPtr(flatOf(dims, shape), memElt);
  Value row = flatOf(dims.drop_back(), shape.drop_back());
  Value byte = dims.back();
  if (l.bytes > 1)
    byte = b.create<arith::ShLIOp>(loc(), byte, i32(llvm::Log2_64(l.bytes)));
  if (l.chunk) {
    int64_t chunkBits = llvm::Log2_64(l.chunk);
    // (byte / chunk ^ m) * chunk + byte % chunk, chunk a power of two.
    Value swz = row;
    if (l.shift)
      swz = b.create<arith::ShRUIOp>(loc(), swz, i32(l.shift));
    swz = b.create<arith::AndIOp>(loc(), swz, i32(l.mask));
    swz = b.create<arith::ShLIOp>(loc(), swz, i32(chunkBits));
    byte = b.create<arith::XOrIOp>(loc(), byte, swz);
  }
  Value rowStart = b.create<arith::MulIOp>(loc(), row, i32(l.pitch));
  Value off = b.create<arith::AddIOp>(loc(), rowStart, byte);
  return smemPtr(off, b.getI8Type());
}

/// Moves a materialized tile to other coordinates through shared memory:
/// every thread writes what it owns, then reads what it needs.
Elems Distributor::gather(Value v, const Coords &c) {
  auto shape = shapeOf(v.getType());
  Type elt = elementType(v.getType());
  bool isBool = elt.isInteger(1);
  Type memElt = isBool ? b.getI8Type() : regType(elt);
  int64_t bytes = std::max<unsigned>(1, memElt.getIntOrFloatBitWidth() / 8);
  const Coords &own = coordsOf(v);
  int64_t maxRun = std::max<int64_t>(1, 16 / bytes);
  int64_t ownRun = heldRun(own, maxRun), toRun = heldRun(c, maxRun);
  ExchangeLayout l = exchangeLayout(shape, bytes, own, ownRun, c, toRun);
  reserveShared(l.rows * l.pitch);

  Elems &vals = get(v);
  int64_t wr = l.vectorWidth(ownRun);
  for (size_t s = 0; s < vals.size(); s += size_t(wr)) {
    auto stored = [&](size_t i) {
      Value x = vals[s + i];
      return isBool ? b.create<arith::ExtUIOp>(loc(), memElt, x).getResult()
                    : x;
    };
    if (wr == 1) {
      Value x = stored(0);
      b.create<LLVM::StoreOp>(loc(), x,
                              exchangeAddress(l, own.at[s], shape, memElt));
      continue;
    }
    Elems run;
    for (int64_t i = 0; i < wr; ++i)
      run.push_back(stored(size_t(i)));
    Value x = packVector(b, loc(), run);
    b.create<LLVM::StoreOp>(
        loc(), x, exchangeAddress(l, own.at[s], shape, memElt), wr * bytes);
  }
  barrier();
  Elems out;
  int64_t rd = l.vectorWidth(toRun);
  for (size_t s = 0; s < c.at.size(); s += size_t(rd)) {
    Value p = exchangeAddress(l, c.at[s], shape, memElt);
    Elems got;
    if (rd == 1) {
      got.push_back(b.create<LLVM::LoadOp>(loc(), memElt, p));
    } else {
      Value x = b.create<LLVM::LoadOp>(loc(), VectorType::get({rd}, memElt), p,
                                       rd * bytes);
      for (int64_t i = 0; i < rd; ++i)
        got.push_back(b.create<LLVM::ExtractElementOp>(loc(), x, i32(i)));
    }
    for (Value x : got)
      out.push_back(
          isBool ? b.create<arith::TruncIOp>(loc(), elt, x).getResult() : x);
  }
  barrier();
  return out;
}
