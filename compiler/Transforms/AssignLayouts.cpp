//===- AssignLayouts.cpp - tile-assign-layouts ----------------------------===//
//
// Puts a layout on the type of every tile of a kernel (TileLayouts.h) and a
// tile.convert_layout wherever an op needs an operand in another layout.
// The rules are those convert-tile-to-gpu lowers by, which checks that each
// value it lowers is held where its type says:
//
// - a tile is blocked unless one of the rules below holds it elsewhere,
//   over the kernel's threads, or in a producer warpgroup's region over the
//   producer's (a pointer ring's addresses, tile.warp_specialize);
// - tile.dot and tile.sparse_dot produce the mma.sync accumulator layout
//   (rows to warps first), a tile.ring_dot with mma_sync one whose warp
//   tiles are as square as fits (mmaWarpsBalanced: the warps share the
//   stage's reads), or whole rows a warp when its A is in registers (so
//   are tile.wgmma_operand's with mma_sync: mma.sync's A fragments), other
//   ring_dots and tile.wgmma_operand wgmma's, and tile.ring_drain keeps its
//   ring_dot's;
// - element-wise math keeps the layout of its first operand that is
//   "placed" (held by one of these rules, in shorter runs, or carried by a
//   loop or branch) and converts the others to it;
// - a loop or branch carries a tile in the layout of what flows into it
//   (preferred()), converting its initial and yielded values;
// - a reduction of a placed tile whose outputs each lie in one lane group
//   stays there (#tile.slice of the source's layout), as does one within
//   each thread of a blocked tile;
// - a broadcast of a placed tile is left to its users, who evaluate it at
//   their own coordinates: it takes the layout of the tile its reduction
//   came from, so that the users in that layout need no conversion;
// - a load is blocked in shorter runs than the kernel's when no global
//   access of its shape can move a whole run (AxisInfo: a mask that changes
//   inside a run, an unaligned row length), so that consecutive threads
//   take consecutive elements, as Triton's coalescing does;
// - so is a reduction into memory (`red`, AtomicRMWOp::isReduction) whose
//   elements are wider than the kernel's runs allow 16 bytes of (f32 adds
//   in a kernel of f16 loads): it runs 16 bytes of its own, so that a
//   warp's vector reds cover whole 32-byte sectors, and the loads of its
//   shape follow.
//
//===----------------------------------------------------------------------===//

#include "Conversion/AxisInfo.h"
#include "Dialect/Tile/TileLayouts.h"
#include "Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

#include <map>
#include <set>

namespace sparsetile {
#define GEN_PASS_DEF_ASSIGNLAYOUTS
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

/// Shapes whose loads and reductions get shorter runs than the kernel's,
/// and that run: the widest access where every global access of the shape
/// is narrower than the kernel's runs, and at most 16 bytes of each
/// reduction's element.
using ShortRuns = std::map<SmallVector<int64_t>, int64_t>;

/// Records `run` for `shape`, keeping the shortest one asked for.
static void keepShortest(ShortRuns &runs, ArrayRef<int64_t> shape,
                         int64_t run) {
  auto [it, fresh] = runs.try_emplace(SmallVector<int64_t>(shape), run);
  if (!fresh)
    it->second = std::min(it->second, run);
}

/// Whether `op` is laid out by its own accesses where ShortRuns says so.
static bool takesShortRuns(Operation *op) {
  auto red = dyn_cast<AtomicRMWOp>(op);
  return isa<LoadOp>(op) || (red && red.isReduction());
}

/// The shapes of `kernel` whose accesses are all narrower than its runs.
/// Kernels with tensor cores keep the kernel's runs (their operands are
/// staged for them), as do `@thread_run` kernels.
static ShortRuns findShortRuns(func::FuncOp kernel, const LayoutParams &p) {
  ShortRuns shortRuns;
  bool fixed = kernel->hasAttr(kThreadRunAttr);
  kernel.walk([&](Operation *op) {
    fixed |= isa<DotOp, SparseDotOp, RingDotOp, RingCopyPtrsOp>(op);
  });
  if (fixed)
    return shortRuns;
  AxisInfoAnalysis axis(kernel);
  std::map<SmallVector<int64_t>, std::pair<int64_t, bool>> widest;
  // A red of wider elements than the runs' 16 bytes (f32 in runs of 8)
  // would cover half of each sector a warp instruction touches, and L2
  // reduces sector by sector: the layer norm backward's partial sums ran
  // 1.3-1.5x longer so (bench/NOTES.md, "Layer norm backward: a
  // reduction's runs are its own").
  ShortRuns reductionRuns;
  kernel.walk([&](AtomicRMWOp op) {
    if (!op.isReduction() || !isa<RankedTensorType>(op.getPtr().getType()))
      return;
    auto shape = shapeOf(op.getPtr().getType());
    Type elt = elementType(op.getValue().getType());
    int64_t run = blockedLayout(kernel.getContext(), shape, p).getVec();
    int64_t own = std::max<int64_t>(1, 16 / (elt.getIntOrFloatBitWidth() / 8));
    if (own < run)
      keepShortest(reductionRuns, shape, own);
  });
  kernel.walk([&](Operation *op) {
    Value ptr = isa<LoadOp>(op)    ? cast<LoadOp>(op).getPtr()
                : isa<StoreOp>(op) ? cast<StoreOp>(op).getPtr()
                                   : Value();
    Value mask = isa<LoadOp>(op)    ? cast<LoadOp>(op).getMask()
                 : isa<StoreOp>(op) ? cast<StoreOp>(op).getMask()
                                    : Value();
    if (!ptr || !isa<RankedTensorType>(ptr.getType()))
      return;
    Type elt = cast<PointerType>(elementType(ptr.getType())).getPointee();
    if (elt.isInteger(1)) // Bytes one at a time, whatever the layout.
      return;
    SmallVector<int64_t> shape(shapeOf(ptr.getType()));
    int64_t bytes = std::max<int64_t>(1, elt.getIntOrFloatBitWidth() / 8);
    int64_t run = blockedLayout(kernel.getContext(), shape, p).getVec();
    int64_t full = std::min<int64_t>(run, 16 / bytes);
    int64_t w = axis.accessWidth(ptr, mask, run, bytes);
    auto [it, fresh] = widest.try_emplace(shape, w, w < full);
    if (!fresh)
      it->second = {std::max(it->second.first, w),
                    it->second.second && w < full};
  });
  for (auto &[shape, w] : widest)
    if (w.second)
      shortRuns[shape] = w.first;
  for (auto &[shape, own] : reductionRuns)
    keepShortest(shortRuns, shape, own);
  return shortRuns;
}

/// Whether evaluating tile `v` at other threads' coordinates means moving
/// it through shared memory: it is loaded, reduced, carried by a loop or
/// computed by a long chain (convert-tile-to-gpu recomputes up to 64 pure
/// operations and moves anything else).
static bool needsMove(Value v) {
  llvm::SmallPtrSet<Operation *, 32> seen;
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!isa<RankedTensorType>(x.getType()))
      continue; // Scalars are in every thread.
    Operation *d = x.getDefiningOp();
    if (!d)
      return true;
    StringRef ns = d->getDialect() ? d->getDialect()->getNamespace() : "";
    bool pure = isa<ArangeOp, SplatOp, ExpandDimsOp, BroadcastOp, TransOp,
                    ReshapeOp, tile::AssumeOp, AddPtrOp, ConvertLayoutOp>(d) ||
                ((ns == "arith" || ns == "math" || ns == "ub") &&
                 d->getNumRegions() == 0 && d->getNumResults() == 1);
    if (!pure || (seen.insert(d).second && seen.size() > 64))
      return true;
    for (Value o : d->getOperands())
      work.push_back(o);
  }
  return false;
}

/// The shapes of ShortRuns whose short layouts would cost moves through
/// shared memory in laid-out `kernel`: a conversion into or out of one
/// from a value that must move, or such a value used where the short
/// layout is not kept (broadcasts, atomics, prints, dots).
static std::set<SmallVector<int64_t>> costlyShortRuns(func::FuncOp kernel,
                                                      const LayoutParams &p,
                                                      const ShortRuns &runs) {
  std::set<SmallVector<int64_t>> bad;
  auto isShort = [&](Value v) {
    auto shape = shapeOf(v.getType());
    auto l = dyn_cast_or_null<BlockedLayoutAttr>(encodingOf(v.getType()));
    return l && runs.count(SmallVector<int64_t>(shape)) &&
           l != blockedLayout(kernel.getContext(), shape, p);
  };
  kernel.walk([&](Operation *op) {
    StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
    bool keeps = ns == "arith" || ns == "math" || ns == "scf" ||
                 isa<StoreOp, ReduceOp>(op) || takesShortRuns(op);
    if (auto cv = dyn_cast<ConvertLayoutOp>(op)) {
      if ((isShort(cv.getSrc()) || isShort(cv.getResult())) &&
          needsMove(cv.getSrc()))
        bad.insert(SmallVector<int64_t>(shapeOf(cv.getType())));
      return;
    }
    if (keeps)
      return;
    for (Value o : op->getOperands())
      if (isShort(o) && needsMove(o))
        bad.insert(SmallVector<int64_t>(shapeOf(o.getType())));
  });
  return bad;
}

namespace {

class Assigner {
public:
  Assigner(func::FuncOp kernel, LayoutParams p, ShortRuns shortRuns)
      : ctx(kernel.getContext()), p(p), shortRuns(std::move(shortRuns)),
        dominance(kernel) {
    kernel.walk([&](RingInitOp init) { ringInit = init; });
  }

  LogicalResult visitBlock(Block &block) {
    for (Operation &op : llvm::make_early_inc_range(block))
      if (failed(visitOp(&op)))
        return failure();
    return success();
  }

private:
  MLIRContext *ctx;
  LayoutParams p;
  /// Tiles with a place of their own: what convert-tile-to-gpu records as
  /// held at coordinates other than a fresh blocked layout's (a loop's
  /// carried tiles count even when blocked).
  llvm::DenseSet<Value> placed;
  /// Broadcasts of placed tiles, evaluated at their users' coordinates.
  llvm::DenseSet<Value> deferred;
  /// Shapes whose loads get shorter runs than the kernel's (ShortRuns).
  ShortRuns shortRuns;
  DominanceInfo dominance;
  /// The kernel's ring, if it has one: conversions go through shared
  /// memory that its stages may share (SharedMemory.h).
  RingInitOp ringInit;

  static Attribute layout(Value v) { return encodingOf(v.getType()); }
  Attribute blocked(Value v) {
    return blockedLayout(ctx, shapeOf(v.getType()), p);
  }
  /// Whether `v` is placed by its layout alone: anything but the blocked
  /// layout a fresh tile of its shape gets.
  bool notDefault(Value v, Attribute l) { return l && l != blocked(v); }
  static void setLayout(Value v, Attribute l) {
    v.setType(withLayout(v.getType(), l));
  }
  static bool isTile(Value v) { return isa<RankedTensorType>(v.getType()); }

  /// Makes operand `o` arrive in layout `l`, converting it just before its
  /// user (where convert-tile-to-gpu evaluated it at the user's
  /// coordinates), or before the ring fills when the user runs while the
  /// ring holds blocks and the value exists before (a dot's accumulator
  /// loaded ahead of its K loop): a conversion moves data through shared
  /// memory, and unless the ring is `apart` that is the stages' memory, to
  /// which the ring's copies are still landing.
  void convertOperand(OpOperand &o, Attribute l) {
    Value v = o.get();
    if (!isTile(v) || layout(v) == l)
      return;
    OpBuilder b(o.getOwner());
    // Constants are evaluated in any layout, with no move.
    bool moves =
        !isa_and_nonnull<arith::ConstantOp, SplatOp>(v.getDefiningOp());
    if (moves && ringInit && dominance.properlyDominates(v, ringInit)) {
      Operation *user =
          ringInit->getBlock()->findAncestorOpInBlock(*o.getOwner());
      if (user && ringInit->isBeforeInBlock(user))
        b.setInsertionPoint(ringInit);
    }
    Value c = b.create<ConvertLayoutOp>(v.getLoc(), withLayout(v.getType(), l), v);
    o.set(c);
    if (notDefault(c, l))
      placed.insert(c);
  }

  /// The slice layout a reduction along `axis` of a tile of `shape` held
  /// in `from` stays in, if its outputs each lie in one lane group.
  Attribute heldSlice(Attribute from, ArrayRef<int64_t> shape, int64_t axis) {
    SmallVector<int64_t> out(shape);
    out.erase(out.begin() + axis);
    if (out.empty())
      return {};
    auto slice = SliceLayoutAttr::get(ctx, axis, shape[axis], from);
    return threadCoords(slice, out, p.numThreads) ? slice : Attribute();
  }

  /// The layout of `op` if it is a load or reduction of a shape in
  /// shortRuns.
  Attribute shortRunLayout(Operation *op) {
    if (!takesShortRuns(op))
      return {};
    auto shape = shapeOf(op->getResult(0).getType());
    auto it = shortRuns.find(SmallVector<int64_t>(shape));
    if (it == shortRuns.end())
      return {};
    LayoutParams runs = p;
    runs.vecElems = it->second;
    return blockedLayout(ctx, shape, runs);
  }

  Attribute mma(ArrayRef<int64_t> shape) {
    auto w = mmaWarps(shape[0], shape[1], p.numThreads);
    return w ? MmaLayoutAttr::get(ctx, w->first, w->second) : Attribute();
  }
  Attribute mmaRing(ArrayRef<int64_t> shape) {
    auto w = mmaWarpsBalanced(shape[0], shape[1], p.numThreads);
    return w ? MmaLayoutAttr::get(ctx, w->first, w->second) : Attribute();
  }
  /// Whole rows a warp: a chained ring_dot's (register A) and its operand's.
  Attribute mmaRows(ArrayRef<int64_t> shape) {
    int64_t warps = p.numThreads / 32;
    return mmaSplits(shape[0], shape[1], warps, 1, p.numThreads)
               ? MmaLayoutAttr::get(ctx, warps, 1)
               : Attribute();
  }
  Attribute ringDot(RingDotOp rd, ArrayRef<int64_t> shape) {
    if (!rd.getMmaSync())
      return wgmma(shape);
    return rd.getA() ? mmaRows(shape) : mmaRing(shape);
  }
  Attribute wgmma(ArrayRef<int64_t> shape) {
    auto g = wgmmaGroups(shape[0], shape[1], p.numThreads);
    return g ? WgmmaLayoutAttr::get(ctx, *g) : Attribute();
  }

  /// The layout a tile carried by a loop or branch should keep: that of
  /// what flows into it, so that a dot's accumulator stays in the tensor
  /// cores' layout across iterations. Null: none in particular (blocked).
  Attribute preferred(Value v, int depth = 0) {
    if (depth > 16 || !isTile(v))
      return {};
    if (placed.count(v))
      return layout(v);
    Operation *def = v.getDefiningOp();
    if (!def)
      return {};
    auto shape = shapeOf(v.getType());
    if (auto rd = dyn_cast<RingDotOp>(def))
      return ringDot(rd, shape);
    if (auto drain = dyn_cast<RingDrainOp>(def))
      return preferred(drain.getAcc(), depth + 1);
    if (isa<DotOp, SparseDotOp>(def))
      return mma(shape);
    if (Attribute l = shortRunLayout(def))
      return l;
    if (auto red = dyn_cast<ReduceOp>(def);
        red && red.getKind() != ReduceKind::Argmax)
      if (Attribute from = preferred(red.getSrc(), depth + 1))
        return heldSlice(from, shapeOf(red.getSrc().getType()), red.getAxis());
    unsigned idx = cast<OpResult>(v).getResultNumber();
    if (auto f = dyn_cast<scf::ForOp>(def))
      return preferred(f.getBody()->getTerminator()->getOperand(idx),
                       depth + 1);
    if (auto i = dyn_cast<scf::IfOp>(def))
      return preferred(i.thenYield().getOperand(idx), depth + 1);
    if (auto w = dyn_cast<scf::WhileOp>(def))
      return preferred(w.getAfterBody()->getTerminator()->getOperand(idx),
                       depth + 1);
    StringRef ns = def->getDialect() ? def->getDialect()->getNamespace() : "";
    if (ns == "arith" || ns == "math")
      for (Value operand : def->getOperands())
        if (shapeOf(operand.getType()) == shape)
          if (Attribute l = preferred(operand, depth + 1))
            return l;
    return {};
  }

  /// Each carried tile's layout, from what `yielded` passes back.
  SmallVector<Attribute> carriedLayouts(ValueRange inits, ValueRange yielded) {
    SmallVector<Attribute> out;
    for (auto [v, y] : llvm::zip(inits, yielded)) {
      Attribute l;
      if (isTile(v) && !(l = preferred(y)))
        l = blocked(v);
      out.push_back(l);
    }
    return out;
  }
  void bindCarried(ValueRange values, ArrayRef<Attribute> layouts) {
    for (auto [v, l] : llvm::zip(values, layouts))
      if (l) {
        setLayout(v, l);
        placed.insert(v);
      }
  }
  void convertCarried(MutableArrayRef<OpOperand> operands,
                      ArrayRef<Attribute> layouts) {
    for (auto [o, l] : llvm::zip(operands, layouts))
      if (l)
        convertOperand(o, l);
  }

  LogicalResult visitFor(scf::ForOp op) {
    auto yield = op.getBody()->getTerminator();
    auto layouts = carriedLayouts(op.getInitArgs(), yield->getOperands());
    convertCarried(op.getInitArgsMutable(), layouts);
    bindCarried(op.getRegionIterArgs(), layouts);
    if (failed(visitBlock(*op.getBody())))
      return failure();
    convertCarried(yield->getOpOperands(), layouts);
    bindCarried(op.getResults(), layouts);
    return success();
  }

  LogicalResult visitIf(scf::IfOp op) {
    auto layouts =
        carriedLayouts(op.getResults(), op.thenYield().getOperands());
    for (Region *region : {&op.getThenRegion(), &op.getElseRegion()}) {
      if (region->empty())
        continue;
      if (failed(visitBlock(region->front())))
        return failure();
      convertCarried(region->front().getTerminator()->getOpOperands(),
                     layouts);
    }
    bindCarried(op.getResults(), layouts);
    return success();
  }

  /// scf.while carries tiles as scf.for does, in both regions (the
  /// condition passes its arguments on unchanged).
  LogicalResult visitWhile(scf::WhileOp op) {
    auto yield = op.getAfterBody()->getTerminator();
    auto layouts = carriedLayouts(op.getInits(), yield->getOperands());
    convertCarried(op.getInitsMutable(), layouts);
    bindCarried(op.getBeforeArguments(), layouts);
    if (failed(visitBlock(*op.getBeforeBody())))
      return failure();
    convertCarried(op.getConditionOp().getArgsMutable(), layouts);
    bindCarried(op.getAfterArguments(), layouts);
    if (failed(visitBlock(*op.getAfterBody())))
      return failure();
    convertCarried(yield->getOpOperands(), layouts);
    bindCarried(op.getResults(), layouts);
    return success();
  }

  LogicalResult visitOp(Operation *op) {
    if (auto f = dyn_cast<scf::ForOp>(op))
      return visitFor(f);
    if (auto i = dyn_cast<scf::IfOp>(op))
      return visitIf(i);
    if (auto w = dyn_cast<scf::WhileOp>(op))
      return visitWhile(w);
    // A producer warpgroup spreads its tiles (a pointer ring's addresses
    // and masks, which it copies from) over its own threads.
    if (auto ws = dyn_cast<WarpSpecializeOp>(op)) {
      LayoutParams consumers = p;
      p.numThreads = 32 * ws.getProducerWarps();
      LogicalResult produced = visitBlock(ws.getProducer().front());
      p = consumers;
      if (failed(produced))
        return failure();
      return visitBlock(ws.getConsumer().front());
    }
    // Other regions (a tile.producer that tile-warp-specialize has not
    // split off yet) are laid out in place.
    for (Region &r : op->getRegions())
      for (Block &blk : r)
        if (failed(visitBlock(blk)))
          return failure();
    // A store writes a blocked value from its threads: its pointers and mask
    // are evaluated there. (A value held by the tensor cores is stored from
    // its registers too; lowering evaluates the pointers at its coordinates.)
    if (auto store = dyn_cast<StoreOp>(op))
      if (auto l = dyn_cast_or_null<BlockedLayoutAttr>(layout(store.getValue())))
        for (OpOperand &o : store->getOpOperands())
          convertOperand(o, l);
    if (op->getNumResults() != 1) {
      for (Value r : op->getResults())
        if (isTile(r))
          setLayout(r, blocked(r));
      return success();
    }
    if (!isTile(op->getResult(0)))
      return success();
    Value r = op->getResult(0);
    auto shape = shapeOf(r.getType());
    auto hold = [&](Attribute l) {
      if (!l)
        l = blocked(r);
      setLayout(r, l);
      if (notDefault(r, l))
        placed.insert(r);
    };

    if (isa<DotOp, SparseDotOp>(op)) {
      Attribute l = mma(shape);
      hold(l);
      if (l)
        convertOperand(op->getOpOperand(op->getNumOperands() - 1), l);
      return success();
    }
    if (auto rd = dyn_cast<RingDotOp>(op)) {
      Attribute l = ringDot(rd, shape);
      hold(l);
      // The accumulator arrives where the MMA holds it (a loop's carried
      // one is there already).
      if (l)
        convertOperand(rd.getAccMutable(), l);
      return success();
    }
    if (auto wo = dyn_cast<WgmmaOperandOp>(op)) {
      hold(wo.getMmaSync() ? mmaRows(shape) : wgmma(shape));
      return success();
    }
    if (auto drain = dyn_cast<RingDrainOp>(op)) {
      hold(preferred(drain.getAcc()));
      return success();
    }
    if (isa<ExpandDimsOp, BroadcastOp>(op) &&
        (placed.count(op->getOperand(0)) || deferred.count(op->getOperand(0)))) {
      // Left to the users. A row of a reduction broadcast back over the
      // reduced axis is where the source's layout holds it.
      deferred.insert(r);
      Attribute from = layout(op->getOperand(0));
      auto ed = dyn_cast<ExpandDimsOp>(op);
      auto slice = dyn_cast_or_null<SliceLayoutAttr>(from);
      if (ed && slice && slice.getAxis() == ed.getAxis())
        setLayout(r, slice.getParent());
      else if (isa<BroadcastOp>(op) && !isa<BlockedLayoutAttr>(from))
        setLayout(r, from);
      else
        setLayout(r, blocked(r));
      return success();
    }
    if (auto red = dyn_cast<ReduceOp>(op)) {
      // A blocked source reduces in its own runs; one held otherwise is
      // evaluated in the kernel's.
      Value src = red.getSrc();
      auto srcShape = shapeOf(src.getType());
      int64_t ax = red.getAxis();
      auto srcBlocked = dyn_cast_or_null<BlockedLayoutAttr>(layout(src));
      LayoutParams runs = p;
      if (srcBlocked)
        runs.vecElems = srcBlocked.getVec();
      bool inThread = reducesInThread(srcShape, ax, runs);
      Attribute l;
      if (placed.count(src) && red.getKind() != ReduceKind::Argmax &&
          !(srcBlocked && inThread))
        l = heldSlice(layout(src), srcShape, ax);
      if (!l && inThread)
        l = SliceLayoutAttr::get(ctx, ax, srcShape[ax],
                                 blockedLayout(ctx, srcShape, runs));
      setLayout(r, l ? l : blocked(r));
      if (l)
        placed.insert(r);
      return success();
    }
    StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
    if ((ns == "arith" || ns == "math") && op->getNumRegions() == 0) {
      // Element-wise: the first placed operand's layout.
      Attribute l;
      for (Value operand : op->getOperands())
        if (placed.count(operand) && shapeOf(operand.getType()) == shape) {
          l = layout(operand);
          break;
        }
      hold(l);
      for (OpOperand &o : op->getOpOperands())
        convertOperand(o, layout(r));
      return success();
    }
    if (isa<tile::AssumeOp, AddPtrOp>(op)) {
      // The result is its first operand, offset or promised about.
      Attribute l = layout(op->getOperand(0));
      hold(l ? l : blocked(r));
      for (OpOperand &o : op->getOpOperands())
        convertOperand(o, layout(r));
      return success();
    }
    hold(shortRunLayout(op));
    if (auto scan = dyn_cast<ScanOp>(op))
      convertOperand(scan.getSrcMutable(), layout(r));
    // A load reads its pointers, mask and default where it puts the
    // result; a reduction adds where its (unused) result is held.
    if (takesShortRuns(op))
      for (OpOperand &o : op->getOpOperands())
        convertOperand(o, layout(r));
    return success();
  }
};

struct AssignLayouts
    : public sparsetile::impl::AssignLayoutsBase<AssignLayouts> {
  void runOnOperation() override {
    for (auto kernel : getOperation().getOps<func::FuncOp>())
      if (kernel->hasAttr(kKernelAttr) && !kernel.isExternal() &&
          failed(assignLayouts(kernel)))
        return signalPassFailure();
  }
};

} // namespace

LogicalResult sparsetile::assignLayouts(func::FuncOp kernel) {
  // Every tile laid out already (by this pass, or by hand in a test), or
  // none: a mix would leave the distribution guessing.
  Operation *without = nullptr, *with = nullptr;
  kernel.walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      if (Operation *&first = encodingOf(t) ? with : without;
          isa<RankedTensorType>(t) && !first)
        first = op;
  });
  if (with && without)
    return without->emitOpError("has a tile without a layout in a kernel "
                                "whose other tiles have one");
  if (with || !without)
    return success();
  FailureOr<LayoutParams> p = kernelLayoutParams(kernel);
  if (failed(p))
    return failure();
  // Short runs where they cost no moves: lay out a copy with them, drop the
  // shapes whose conversions would move data, and try again.
  ShortRuns runs = findShortRuns(kernel, *p);
  while (!runs.empty()) {
    auto trial = cast<func::FuncOp>(kernel->clone());
    bool laidOut =
        succeeded(Assigner(trial, *p, runs).visitBlock(trial.getBody().front()));
    auto bad = laidOut ? costlyShortRuns(trial, *p, runs)
                       : std::set<SmallVector<int64_t>>{};
    trial->erase();
    if (!laidOut)
      runs.clear();
    if (bad.empty())
      break;
    for (auto &shape : bad)
      runs.erase(shape);
  }
  return Assigner(kernel, *p, runs).visitBlock(kernel.getBody().front());
}
