//===- TileLayouts.cpp - What the layout attributes mean ------------------===//
//
// The layout rules and per-thread coordinates of TileLayouts.h. The
// formulas mirror the SSA coordinates convert-tile-to-gpu builds
// (Layouts.cpp canonical, DotToMMA.cpp mmaLayout, WgmmaRing.cpp
// wgmmaLayout); the layout lit tests and the PTX of every example kernel
// check that the two agree.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileLayouts.h"

#include "llvm/Support/MathExtras.h"

#include <map>
#include <set>

using namespace mlir;
using namespace sparsetile::tile;

namespace sparsetile::tile {

FailureOr<LayoutParams> kernelLayoutParams(func::FuncOp kernel) {
  LayoutParams p;
  if (auto w = kernel->getAttrOfType<IntegerAttr>(kNumWarpsAttr))
    p.numThreads = w.getInt() * 32;
  // One run length for the whole kernel: 16 bytes of the narrowest type it
  // moves through global memory.
  int64_t minBytes = 4;
  bool fp8 = false, tensorCores = false;
  kernel.walk([&](Operation *op) {
    tensorCores |= isa<DotOp, SparseDotOp, RingDotOp>(op);
    Value ptr = isa<LoadOp>(op)           ? cast<LoadOp>(op).getPtr()
                : isa<StoreOp>(op)        ? cast<StoreOp>(op).getPtr()
                : isa<RingCopyPtrsOp>(op) ? cast<RingCopyPtrsOp>(op).getPtrs()
                                          : Value();
    if (!ptr || !isa<RankedTensorType>(ptr.getType()))
      return;
    Type e = cast<PointerType>(elementType(ptr.getType())).getPointee();
    fp8 |= isFP8(e);
    minBytes = std::min<int64_t>(
        minBytes, std::max<unsigned>(1, e.getIntOrFloatBitWidth() / 8));
  });
  // Runs of at most 8 elements (8 bytes of i8: the byte kernels' layouts,
  // which the shipped examples pin), but 16 bytes of fp8, whose tiles are
  // usually operands in bulk.
  p.vecElems = std::min<int64_t>(fp8 ? 16 : 8, 16 / minBytes);
  // `@thread_run(N)`: runs of N elements instead, so that a thread can hold
  // a whole row of a [Q, 16] tile of 2-byte values (mvue24_compress_t's
  // 16-token units). Loads, stores and exchanges still move at most 16
  // bytes an instruction.
  if (auto run = kernel->getAttrOfType<IntegerAttr>(kThreadRunAttr);
      run && run.getInt() > 0) {
    if (tensorCores)
      return kernel.emitError("@thread_run does not apply to a kernel with "
                              "dot or sparse_dot, whose operands are laid out "
                              "for the default runs");
    p.vecElems = run.getInt();
  }
  return p;
}

/// The blocked layout's (vec, threads) for `shape`.
static std::pair<int64_t, int64_t> blockedParams(ArrayRef<int64_t> shape,
                                                 const LayoutParams &p) {
  int64_t elems = 1;
  for (int64_t d : shape)
    elems *= d;
  int64_t vec = shape.empty() ? 1 : std::min<int64_t>(p.vecElems, shape.back());
  return {vec, std::min<int64_t>(p.numThreads, elems / vec)};
}

BlockedLayoutAttr blockedLayout(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                const LayoutParams &p) {
  auto [vec, threads] = blockedParams(shape, p);
  return BlockedLayoutAttr::get(ctx, vec, threads);
}

std::optional<std::pair<int64_t, int64_t>> mmaWarps(int64_t m, int64_t n,
                                                     int64_t numThreads) {
  int64_t warps = numThreads / 32, wm = 1;
  while (wm < warps && m % (16 * wm * 2) == 0)
    wm *= 2;
  int64_t wn = warps / wm;
  if (wn < 1 || n % (8 * wn))
    return std::nullopt;
  return std::make_pair(wm, wn);
}

bool mmaSplits(int64_t m, int64_t n, int64_t warpsM, int64_t warpsN,
               int64_t numThreads) {
  return warpsM >= 1 && warpsN >= 1 && warpsM * warpsN * 32 == numThreads &&
         m % (16 * warpsM) == 0 && n % (8 * warpsN) == 0;
}

std::optional<std::pair<int64_t, int64_t>>
mmaWarpsBalanced(int64_t m, int64_t n, int64_t numThreads) {
  int64_t warps = numThreads / 32, wm = 1, wn = 1;
  while (wm * wn < warps) {
    bool mFits = m % (16 * wm * 2) == 0, nFits = n % (8 * wn * 2) == 0;
    if (mFits && (m / (16 * wm) >= n / (8 * wn) || !nFits))
      wm *= 2;
    else if (nFits)
      wn *= 2;
    else
      return std::nullopt;
  }
  if (!mmaSplits(m, n, wm, wn, numThreads))
    return std::nullopt;
  return std::make_pair(wm, wn);
}

std::optional<int64_t> wgmmaGroups(int64_t m, int64_t n, int64_t numThreads) {
  int64_t groups = numThreads / 128;
  if (groups < 1 || numThreads % 128 || m % (64 * groups) || n % 8 ||
      m / (64 * groups) > 2)
    return std::nullopt;
  return groups;
}

bool reducesInThread(ArrayRef<int64_t> shape, int64_t axis,
                     const LayoutParams &p) {
  if (shape.size() < 2)
    return false; // A reduction to a scalar.
  auto [vec, threads] = blockedParams(shape, p);
  int64_t lo = 0; // Where the axis' bits start in the flat index.
  for (size_t d = axis + 1; d < shape.size(); ++d)
    lo += llvm::Log2_64(shape[d]);
  int64_t hi = lo + llvm::Log2_64(shape[axis]);
  int64_t tLo = llvm::Log2_64(vec), tHi = tLo + llvm::Log2_64(threads);
  return hi <= tLo || lo >= tHi; // No thread bit is reduced.
}

std::optional<HeldReductionPlan>
planHeldReduction(ArrayRef<SmallVector<const ThreadValues *>> slots,
                  ArrayRef<int64_t> shape, int64_t ax, int64_t numThreads) {
  size_t rank = shape.size();
  if (rank < 2 || slots.empty() || !llvm::isPowerOf2_64(uint64_t(numThreads)) ||
      numThreads < 32)
    return std::nullopt;
  using Table = const ThreadValues *;
  // The slots of one output hold the same non-reduced coordinates in every
  // thread.
  HeldReductionPlan plan;
  SmallVector<SmallVector<Table>> outKeys;
  SmallVector<Table> reduced;
  for (auto [s, slot] : llvm::enumerate(slots)) {
    SmallVector<Table> keyTabs;
    for (size_t d = 0; d < rank; ++d)
      (int64_t(d) == ax ? reduced : keyTabs).push_back(slot[d]);
    auto same = [&](ArrayRef<Table> o) {
      for (size_t i = 0; i < o.size(); ++i)
        if (*o[i] != *keyTabs[i])
          return false;
      return true;
    };
    auto it = llvm::find_if(outKeys, same);
    plan.groupOf.push_back(it - outKeys.begin());
    if (it == outKeys.end()) {
      outKeys.push_back(keyTabs);
      plan.firstSlot.push_back(s);
    }
  }
  // Thread bits no output depends on: those lanes combine. Bits past the
  // lane's five would need shared memory.
  int64_t logT = llvm::Log2_64(uint64_t(numThreads)), mask = 0;
  for (int64_t bit = 0; bit < logT; ++bit) {
    bool free = true;
    for (auto &tabs : outKeys)
      for (Table t : tabs)
        for (int64_t i = 0; i < numThreads && free; ++i)
          free = (*t)[i] == (*t)[i ^ (int64_t(1) << bit)];
    if (!free)
      continue;
    if (bit >= 5)
      return std::nullopt;
    mask |= int64_t(1) << bit;
  }
  // Each output belongs to one lane group (the owner: its lane group and
  // its slot there), where its elements are distinct and number the whole
  // reduced axis.
  std::map<SmallVector<int32_t>, std::pair<int64_t, size_t>> owner;
  for (int64_t t = 0; t < numThreads; ++t)
    for (size_t g = 0; g < outKeys.size(); ++g) {
      SmallVector<int32_t> k;
      for (Table tab : outKeys[g])
        k.push_back((*tab)[t]);
      auto here = std::make_pair(t & ~mask, g);
      auto [it, fresh] = owner.emplace(k, here);
      if (!fresh && it->second != here)
        return std::nullopt;
    }
  for (int64_t t = 0; t < numThreads; ++t) {
    if (t & mask)
      continue;
    for (size_t g = 0; g < outKeys.size(); ++g) {
      std::set<int32_t> seen;
      int64_t count = 0;
      for (int64_t sub = mask;; sub = (sub - 1) & mask) {
        for (size_t s = 0; s < slots.size(); ++s)
          if (plan.groupOf[s] == int64_t(g)) {
            seen.insert((*reduced[s])[t | sub]);
            ++count;
          }
        if (!sub)
          break;
      }
      if (count != shape[ax] || int64_t(seen.size()) != count)
        return std::nullopt;
    }
  }
  plan.laneMask = mask;
  return plan;
}

/// An [m, n] accumulator in 16x8 fragments: lane l holds rows l / 4 and
/// l / 4 + 8 and columns 2 (l mod 4) and the next of each, starting at the
/// thread's (row0, col0); `frags` lists the fragments' offsets in slot
/// order.
static ThreadCoords fragments(
    int64_t numThreads, llvm::function_ref<std::pair<int64_t, int64_t>(int64_t)> base,
    ArrayRef<std::pair<int64_t, int64_t>> frags) {
  ThreadCoords c;
  for (auto [fr, fc] : frags)
    for (int64_t e = 0; e < 4; ++e) {
      ThreadValues &rows = c.values.emplace_back();
      ThreadValues &cols = c.values.emplace_back();
      for (int64_t t = 0; t < numThreads; ++t) {
        int64_t lane = t & 31;
        auto [r0, c0] = base(t);
        rows.push_back(int32_t(r0 + (lane >> 2) + fr + 8 * (e / 2)));
        cols.push_back(int32_t(c0 + ((lane & 3) << 1) + fc + e % 2));
      }
      c.at.push_back({&rows, &cols});
    }
  return c;
}

std::optional<ThreadCoords> threadCoords(Attribute layout,
                                         ArrayRef<int64_t> shape,
                                         int64_t numThreads) {
  if (auto bl = dyn_cast<BlockedLayoutAttr>(layout)) {
    // Slot r * vec + k of thread t holds flat index
    // r * threads * vec + (t mod threads) * vec + k, row-major.
    int64_t elems = 1;
    for (int64_t d : shape)
      elems *= d;
    int64_t vec = bl.getVec(), threads = bl.getThreads();
    if (shape.empty() || vec * threads == 0 || elems % (vec * threads))
      return std::nullopt;
    ThreadCoords c;
    for (int64_t s = 0; s < elems / threads; ++s) {
      SmallVector<ThreadValues *> dims;
      for (size_t d = 0; d < shape.size(); ++d)
        dims.push_back(&c.values.emplace_back());
      for (int64_t t = 0; t < numThreads; ++t) {
        int64_t flat = s / vec * threads * vec + t % threads * vec + s % vec;
        for (size_t d = shape.size(); d-- > 0;) {
          dims[d]->push_back(int32_t(flat % shape[d]));
          flat /= shape[d];
        }
      }
      c.at.emplace_back(dims.begin(), dims.end());
    }
    return c;
  }
  if (shape.size() != 2 && !isa<SliceLayoutAttr>(layout))
    return std::nullopt;
  if (auto mma = dyn_cast<MmaLayoutAttr>(layout)) {
    int64_t m = shape[0], n = shape[1];
    if (!mmaSplits(m, n, mma.getWarpsM(), mma.getWarpsN(), numThreads))
      return std::nullopt;
    int64_t wm = mma.getWarpsM(), repM = m / (16 * wm),
            repN = n / (8 * mma.getWarpsN());
    SmallVector<std::pair<int64_t, int64_t>> frags;
    for (int64_t im = 0; im < repM; ++im)
      for (int64_t in = 0; in < repN; ++in)
        frags.push_back({im * 16, in * 8});
    return fragments(
        numThreads,
        [&](int64_t t) {
          int64_t warp = t >> 5;
          return std::make_pair(warp % wm * repM * 16, warp / wm * repN * 8);
        },
        frags);
  }
  if (auto wg = dyn_cast<WgmmaLayoutAttr>(layout)) {
    int64_t m = shape[0], n = shape[1];
    auto groups = wgmmaGroups(m, n, numThreads);
    if (!groups || *groups != wg.getGroups())
      return std::nullopt;
    int64_t reps = m / (64 * *groups);
    SmallVector<std::pair<int64_t, int64_t>> frags;
    for (int64_t r = 0; r < reps; ++r)
      for (int64_t j = 0; j < n / 8; ++j)
        frags.push_back({64 * r, 8 * j});
    return fragments(
        numThreads,
        [&](int64_t t) {
          int64_t warp = t >> 5;
          return std::make_pair((warp >> 2) * 64 * reps + (warp & 3) * 16,
                                int64_t(0));
        },
        frags);
  }
  if (auto sl = dyn_cast<SliceLayoutAttr>(layout)) {
    SmallVector<int64_t> parentShape(shape);
    int64_t ax = sl.getAxis();
    if (ax < 0 || ax > int64_t(shape.size()))
      return std::nullopt;
    parentShape.insert(parentShape.begin() + ax, sl.getSize());
    std::optional<ThreadCoords> parent =
        threadCoords(sl.getParent(), parentShape, numThreads);
    if (!parent)
      return std::nullopt;
    auto plan = planHeldReduction(parent->at, parentShape, ax, numThreads);
    if (!plan)
      return std::nullopt;
    // The parent's values move with their deque, which keeps them where
    // they are; each output keeps its group's first slot less the axis.
    ThreadCoords c = std::move(*parent);
    auto slots = std::move(c.at);
    c.at.clear();
    for (size_t s : plan->firstSlot) {
      SmallVector<const ThreadValues *> dims(slots[s]);
      dims.erase(dims.begin() + ax);
      c.at.push_back(dims);
    }
    return c;
  }
  return std::nullopt;
}

Attribute encodingOf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t ? t.getEncoding() : Attribute();
}

Type withLayout(Type type, Attribute layout) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return type;
  return RankedTensorType::get(t.getShape(), t.getElementType(), layout);
}

LogicalResult checkSharedLayouts(func::FuncOp kernel) {
  // What the copies wrote at each stage offset (a kernel has one ring).
  std::map<int64_t, SmallVector<std::pair<Operation *, SharedLayoutAttr>>>
      written;
  kernel.walk([&](Operation *op) {
    if (auto c = dyn_cast<RingCopyOp>(op))
      written[int64_t(c.getOffset())].push_back({op, c.getLayout()});
    else if (auto c = dyn_cast<RingCopyPtrsOp>(op))
      written[int64_t(c.getOffset())].push_back({op, c.getLayout()});
  });
  auto check = [&](RingDotOp dot, StringRef name, int64_t offset,
                   SharedLayoutAttr read) -> LogicalResult {
    for (auto [copy, layout] : written[offset])
      if (layout != read) {
        InFlightDiagnostic d = dot.emitOpError()
                               << "reads " << name << " at stage offset "
                               << offset << " as " << read
                               << ", but a copy wrote it as " << layout;
        d.attachNote(copy->getLoc()) << "the copy";
        return d;
      }
    return success();
  };
  WalkResult r = kernel.walk([&](RingDotOp dot) {
    if (SharedLayoutAttr a = dot.getALayoutAttr();
        a && failed(check(dot, "A", dot.getAOffset(), a)))
      return WalkResult::interrupt();
    if (failed(check(dot, "B", dot.getBOffset(), dot.getBLayout())))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

} // namespace sparsetile::tile
