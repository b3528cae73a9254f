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
//              num_programs(0) -> %gx, num_programs(1) -> %gy>
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
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"
#include "Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace sparsetile {
#define GEN_PASS_DEF_PERSISTENT
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

LogicalResult makePersistent(func::FuncOp func) {
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
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Value total = b.create<arith::MulIOp>(l, gx, gy);
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
  SmallVector<Operation *> replaced;
  body->walk([&](Operation *op) {
    if (auto p = dyn_cast<ProgramIdOp>(op)) {
      p.replaceAllUsesWith(p.getAxis() == 0 ? pid0 : pid1);
      replaced.push_back(op);
    } else if (auto p = dyn_cast<NumProgramsOp>(op)) {
      p.replaceAllUsesWith(p.getAxis() == 0 ? gx : gy);
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
      auto attr = func->getAttrOfType<IntegerAttr>(kPersistentAttr);
      if (attr && attr.getInt() && failed(makePersistent(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
