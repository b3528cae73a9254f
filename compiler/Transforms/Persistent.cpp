//===- Persistent.cpp - About one program per SM, looping over tiles ------===//
//
// tile-persistent (see Passes.td) makes a `@persistent(1)` kernel loop over
// the programs of the grid it was launched for:
//
//   kernel k(args..., %gx: i32, %gy: i32, %queue: ptr<i32>)  // hidden
//     %total = %gx * %gy
//     scf.while (%i = 0) {
//       %v = tile.next_tile %i, %total, %queue
//       scf.condition(%v < %total) %i, %v
//     } do (%i, %v) {
//       <body: program_id(0) -> %v % %gx, program_id(1) -> %v / %gx,
//              num_programs(0) -> %gx, num_programs(1) -> %gy,
//              cluster_id() / cluster_rank() -> that program_id(0) / and % C>
//       scf.yield %i + 1
//     }
//
// The body is the kernel as written, so a kernel is persistent or not by its
// attribute alone. What the loop buys: a TMA ring continues across tiles
// (tile.ring_base), so the producer loads tile i + 1 while the consumers
// run tile i's epilogue; the launch and ring set-up are paid once per SM;
// and the grid's tail is one wave of programs, not a wave of blocks.
// Which tile each step gets is tile.next_tile's business: a queue in
// warp-specialized kernels, where tiles carry uneven work (SparseDrop's
// kept-block lists) and a static schedule let the programs drift apart
// (bench/NOTES.md, "Warp specialization + persistent loop").
//
// The pass also replaces tile.program_limit %n (the DSL's program_limit),
// in every kernel: a persistent loop takes min(%gx * %gy, %n) as its
// total, its value's ops hoisted ahead of the loop; a one-tile-per-program
// kernel wraps what follows the op in `scf.if` (its linear program id <
// %n). Both need the op at the top level, with no write before it and a
// value that does not depend on the program, which is checked here.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"
#include "Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>

namespace sparsetile {
#define GEN_PASS_DEF_PERSISTENT
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

/// Whether `op` or anything nested in it reads the program's position.
bool readsProgram(Operation *op) {
  return op
      ->walk([](Operation *o) {
        return isa<ProgramIdOp, NumProgramsOp, ClusterIdOp, ClusterRankOp>(o)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether `op` or anything nested in it may write memory.
bool mayWrite(Operation *op) {
  return op
      ->walk([](Operation *o) {
        auto effects = dyn_cast<MemoryEffectOpInterface>(o);
        if (!effects)
          return o->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
                         o->getNumRegions() == 0
                     ? WalkResult::advance()
                     : WalkResult::interrupt();
        return effects.hasEffect<MemoryEffects::Write>()
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The kernel's tile.program_limit, checked: at most one, at the top level,
/// no write before it. Null when there is none or on error (`failed`).
ProgramLimitOp findLimit(func::FuncOp func, bool &failed) {
  ProgramLimitOp limit;
  failed = false;
  func.walk([&](ProgramLimitOp op) {
    if (failed)
      return;
    if (limit) {
      op.emitOpError("appears twice in one kernel");
      failed = true;
    } else if (op->getBlock() != &func.getBody().front()) {
      op.emitOpError("must stand at the kernel's top level, not inside "
                     "a loop or branch");
      failed = true;
    }
    limit = op;
  });
  if (!limit || failed)
    return failed ? ProgramLimitOp() : limit;
  // The programs of a cluster wait for each other (multicast copies,
  // cluster barriers): one skipping the kernel would hang its partner.
  if (auto c = func->getAttrOfType<IntegerAttr>(kClusterAttr);
      c && c.getInt() > 1) {
    limit.emitOpError("does not combine with @cluster(")
        << c.getInt() << "): the programs of a cluster must all run";
    failed = true;
    return ProgramLimitOp();
  }
  for (Operation *op = &func.getBody().front().front(); op != limit;
       op = op->getNextNode())
    if (mayWrite(op)) {
      InFlightDiagnostic d =
          limit.emitOpError("must come before anything that writes memory");
      if (auto at = dyn_cast<FileLineColLoc>(op->getLoc()))
        d << " (a write at line " << at.getLine() << ")";
      failed = true;
      return ProgramLimitOp();
    }
  return limit;
}

/// Moves the ops that compute `limit`'s value to the start of the entry
/// block (in their order), for a persistent loop's total. They must not
/// read the program's position (they run once, before any tile).
LogicalResult hoistLimitValue(ProgramLimitOp limit) {
  Block *entry = limit->getBlock();
  SmallVector<Operation *> slice;
  SmallVector<Value> work{limit.getN()};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (readsProgram(def))
      return limit.emitOpError("needs a value that does not depend on the "
                               "program (program_id, num_programs)");
    slice.push_back(def);
    // What the op and the ops nested in it use from outside it: results of
    // earlier top-level ops (arguments have no defining op).
    def->walk([&](Operation *o) {
      for (Value operand : o->getOperands())
        if (Operation *d = operand.getDefiningOp(); d && !def->isAncestor(d))
          work.push_back(operand);
    });
  }
  // Ahead of the first op that does not compute the value, in block order.
  Operation *anchor = &entry->front();
  while (seen.contains(anchor))
    anchor = anchor->getNextNode();
  llvm::sort(slice,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : slice)
    if (!op->isBeforeInBlock(anchor))
      op->moveBefore(anchor);
  return success();
}

/// A one-tile-per-program kernel: what follows `limit` runs only in the
/// programs numbered below its value.
void guardByLimit(func::FuncOp func, ProgramLimitOp limit) {
  Location l = limit.getLoc();
  Block &entry = func.getBody().front();
  Operation *ret = entry.getTerminator();
  OpBuilder b(limit);
  Type i32 = b.getI32Type();
  Value pid0 = b.create<ProgramIdOp>(l, i32, 0);
  Value pid1 = b.create<ProgramIdOp>(l, i32, 1);
  Value gx = b.create<NumProgramsOp>(l, i32, 0);
  Value linear =
      b.create<arith::AddIOp>(l, pid0, b.create<arith::MulIOp>(l, pid1, gx));
  Value run = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, linear,
                                      limit.getN());
  auto guard = b.create<scf::IfOp>(l, TypeRange{}, run, /*withElse=*/false);
  Operation *yield = guard.thenBlock()->getTerminator();
  while (guard->getNextNode() != ret)
    guard->getNextNode()->moveBefore(yield);
  limit.erase();
}

LogicalResult makePersistent(func::FuncOp func, ProgramLimitOp limit) {
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("a persistent kernel needs a structured body");
  bool usesZ = false;
  func.walk([&](Operation *op) {
    if (auto p = dyn_cast<ProgramIdOp>(op))
      usesZ |= p.getAxis() == 2;
    if (auto p = dyn_cast<NumProgramsOp>(op))
      usesZ |= p.getAxis() == 2;
  });
  if (usesZ)
    return func.emitOpError(
        "@persistent kernels use grid axes 0 and 1 only, not program_id(2)");

  MLIRContext *ctx = func.getContext();
  Location l = func.getLoc();
  Type i32 = IntegerType::get(ctx, 32);
  Type queueType = PointerType::get(ctx, i32);
  unsigned n = func.getNumArguments();
  if (failed(func.insertArgument(n, i32, {}, l)) ||
      failed(func.insertArgument(n + 1, i32, {}, l)) ||
      failed(func.insertArgument(n + 2, queueType, {}, l)))
    return failure();
  Value gx = func.getArgument(n), gy = func.getArgument(n + 1),
        queue = func.getArgument(n + 2);

  Block &entry = func.getBody().front();
  Operation *ret = entry.getTerminator();
  // The limit's value first (computed once), then the loop after it.
  if (limit && failed(hoistLimitValue(limit)))
    return failure();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  if (limit)
    b.setInsertionPointAfterValue(limit.getN());
  Value total = b.create<arith::MulIOp>(l, gx, gy);
  if (limit) {
    total = b.create<arith::MinSIOp>(l, total, limit.getN());
    // Ops go in before the insertion point, which is the limit: move it on
    // to the op after before erasing the limit.
    b.setInsertionPoint(limit->getNextNode());
    limit.erase();
  }
  Value zero = b.create<arith::ConstantOp>(l, b.getI32IntegerAttr(0));
  auto loop = b.create<scf::WhileOp>(
      l, TypeRange{i32, i32}, ValueRange{zero},
      [&](OpBuilder &bb, Location bl, ValueRange args) {
        Value v = bb.create<NextTileOp>(bl, i32, args[0], total, queue);
        Value more =
            bb.create<arith::CmpIOp>(bl, arith::CmpIPredicate::slt, v, total);
        bb.create<scf::ConditionOp>(bl, more, ValueRange{args[0], v});
      },
      [&](OpBuilder &bb, Location bl, ValueRange args) {
        Value one = bb.create<arith::ConstantOp>(bl, bb.getI32IntegerAttr(1));
        bb.create<scf::YieldOp>(
            bl, ValueRange{bb.create<arith::AddIOp>(bl, args[0], one)});
      });
  Block *body = loop.getAfterBody();
  // Move the kernel's ops (everything after the loop, but the return) in.
  while (loop->getNextNode() != ret)
    loop->getNextNode()->moveBefore(body->getTerminator());

  OpBuilder ib = OpBuilder::atBlockBegin(body);
  Value v = body->getArgument(1);
  Value pid0 = ib.create<arith::RemSIOp>(l, v, gx);
  Value pid1 = ib.create<arith::DivSIOp>(l, v, gx);
  // cluster_id() and cluster_rank() are program_id(0) / C and % C of the
  // virtual program too: left alone they would read the physical block,
  // and every step of a program would run the same tile.
  auto clusterAttr = func->getAttrOfType<IntegerAttr>(kClusterAttr);
  int64_t clusterSize =
      clusterAttr ? std::max<int64_t>(clusterAttr.getInt(), 1) : 1;
  Value c = ib.create<arith::ConstantOp>(l, ib.getI32IntegerAttr(clusterSize));
  Value clusterId = ib.create<arith::DivSIOp>(l, pid0, c);
  Value clusterRank = ib.create<arith::RemSIOp>(l, pid0, c);
  SmallVector<Operation *> replaced;
  body->walk([&](Operation *op) {
    if (auto p = dyn_cast<ProgramIdOp>(op)) {
      p.replaceAllUsesWith(p.getAxis() == 0 ? pid0 : pid1);
      replaced.push_back(op);
    } else if (auto p = dyn_cast<NumProgramsOp>(op)) {
      p.replaceAllUsesWith(p.getAxis() == 0 ? gx : gy);
      replaced.push_back(op);
    } else if (isa<ClusterIdOp>(op)) {
      op->replaceAllUsesWith(ValueRange{clusterId});
      replaced.push_back(op);
    } else if (isa<ClusterRankOp>(op)) {
      op->replaceAllUsesWith(ValueRange{clusterRank});
      replaced.push_back(op);
    }
  });
  for (Operation *op : replaced)
    op->erase();
  return success();
}

struct PersistentPass
    : public sparsetile::impl::PersistentBase<PersistentPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      bool bad = false;
      ProgramLimitOp limit = findLimit(func, bad);
      if (bad)
        return signalPassFailure();
      auto attr = func->getAttrOfType<IntegerAttr>(kPersistentAttr);
      if (attr && attr.getInt()) {
        if (failed(makePersistent(func, limit)))
          return signalPassFailure();
      } else if (limit) {
        guardByLimit(func, limit);
      }
    }
  }
};

} // namespace
