//===- TileQueue.cpp - The persistent loop's tile queue -------------------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Lowers tile.next_tile, the step of tile-persistent's loop
// that says which tile (virtual program) a persistent program runs next.
//
// Warp-specialized kernels hand tiles out dynamically. The producer runs
// ahead of the consumers (it loads tile i + 1 while they finish tile i), so
// it is the producer that takes tiles, and the consumers learn them from it:
//
//   producer (one warp; its lane 0 is the ring's leader), step i:
//     slot = i % Q, parity = (i / Q) & 1
//     leader: wait empty[slot], parity ^ 1   (the first Q steps pass)
//             t = atomicAdd(&queue[0], 1)    (relaxed, gpu scope)
//             value[slot] = t; arrive full[slot]
//             if t >= total:                 (this program is done)
//               if atomicAdd(&queue[1], 1) == programs - 1 (acq_rel):
//                 queue[0] = queue[1] = 0    (the last one resets both)
//     the warp: bar.warp.sync; t = value[slot]
//   consumers, step i:
//     wait full[slot], parity; t = value[slot]
//     lane 0 of each warp: arrive empty[slot]
//
// Every program takes exactly one value >= total, and only after that
// counts itself finished, so when the last one resets the counter no
// program will read it again in this launch; the next launch on the stream
// starts after this one ended and sees zeros. The runtime keeps one queue
// per stream (two launches running at once on different streams must not
// share one).
//
// Shared memory, after the ring's mbarriers: Q `full` mbarriers (one
// arrival: the leader's), Q `empty` ones (one arrival per consumer warp,
// of both groups in a ping-pong kernel: each reads every step's tile),
// then Q i32 values.
//
// Elsewhere (no producer to run ahead) the schedule is static: step i of
// program p runs tile p + i * programs.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

Value Distributor::queueAddress(Value slot, int64_t part) {
  static_assert(20 * kQueueSlots + 16 <= SharedMemoryPlan::kQueueBytes,
                "queue area too small");
  int64_t base = smem.queueAt + (part == 0   ? 0
                                 : part == 1 ? 8 * kQueueSlots
                                 : part == 2 ? 16 * kQueueSlots
                                             : 20 * kQueueSlots);
  Value at = b.create<arith::MulIOp>(loc(), slot, i32(part == 2 ? 4 : 8));
  return b.create<arith::AddIOp>(loc(), ringBase,
                                 b.create<arith::AddIOp>(loc(), at, i32(base)));
}

void Distributor::initTileQueue() {
  for (int64_t s = 0; s < kQueueSlots; ++s) {
    inlinePtx("mbarrier.init.shared::cta.b64 [$0], 1;", "r",
              {queueAddress(i32(s), 0)});
    inlinePtx("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
              {queueAddress(i32(s), 1), i32(consumerGroups * numThreads / 32)});
  }
  // Ping-pong: turn[g] completes a phase when the other group's warps have
  // all ended a main loop (tile.turn_pass); group g waits on it.
  if (consumerGroups > 1)
    for (int64_t g = 0; g < 2; ++g)
      inlinePtx("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
                {queueAddress(i32(g), 3), i32(numThreads / 32)});
}

// Step i's owner waits for step i - 1's main loop: turn[i % 2] completes
// its phase k once the other group ended the main loop of step 2k + (i % 2
// == 0), so step i waits for phase (i - 1) / 2.
LogicalResult Distributor::lowerTurnWait(TurnWaitOp op) {
  if (!turnPassed)
    return op.emitOpError("needs the tile queue of a ping-pong kernel");
  Value step = get(op.getStep())[0];
  b.create<LLVM::StoreOp>(loc(), i32(0), turnPassed);
  Value later =
      b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::ne, step, i32(0));
  auto ifOp = b.create<scf::IfOp>(loc(), later, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  Value turn = queueAddress(b.create<arith::RemUIOp>(loc(), step, i32(2)), 3);
  Value phase = b.create<arith::AndIOp>(
      loc(),
      b.create<arith::DivUIOp>(
          loc(), b.create<arith::SubIOp>(loc(), step, i32(1)), i32(2)),
      i32(1));
  waitParity(turn, phase);
  return success();
}

// Lane 0 of each warp arrives on the other group's turn barrier, once per
// step (the flag turn_wait cleared).
LogicalResult Distributor::lowerTurnPass(TurnPassOp op) {
  if (!turnPassed)
    return op.emitOpError("needs the tile queue of a ping-pong kernel");
  Value step = get(op.getStep())[0];
  Value passed = b.create<LLVM::LoadOp>(loc(), b.getI32Type(), turnPassed);
  Value lane0 = b.create<arith::CmpIOp>(
      loc(), arith::CmpIPredicate::eq,
      b.create<arith::AndIOp>(loc(), tid, i32(31)), i32(0));
  Value arrive = b.create<arith::AndIOp>(
      loc(), lane0,
      b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::eq, passed, i32(0)));
  b.create<LLVM::StoreOp>(loc(), i32(1), turnPassed);
  auto ifOp = b.create<scf::IfOp>(loc(), arrive, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  Value other = b.create<arith::RemUIOp>(
      loc(), b.create<arith::AddIOp>(loc(), step, i32(1)), i32(2));
  inlinePtx("mbarrier.arrive.shared::cta.b64 _, [$0];", "r",
            {queueAddress(other, 3)});
  return success();
}

LogicalResult Distributor::lowerNextTile(NextTileOp op) {
  Value step = get(op.getStep())[0];
  Type i32t = b.getI32Type();
  if (!tileQueue) {
    Value pid = b.create<arith::IndexCastOp>(
        loc(), i32t, b.create<gpu::BlockIdOp>(loc(), gpu::Dimension::x));
    Value programs = b.create<arith::IndexCastOp>(
        loc(), i32t, b.create<gpu::GridDimOp>(loc(), gpu::Dimension::x));
    dist[op.getResult()] = {b.create<arith::AddIOp>(
        loc(), pid, b.create<arith::MulIOp>(loc(), step, programs))};
    return success();
  }
  if (!inProducer && !inConsumer)
    return op.emitOpError("in a warp-specialized kernel must be inside "
                          "tile.warp_specialize");
  Value slot = b.create<arith::RemUIOp>(loc(), step, i32(kQueueSlots));
  Value phase = b.create<arith::AndIOp>(
      loc(), b.create<arith::DivUIOp>(loc(), step, i32(kQueueSlots)), i32(1));
  Value full = queueAddress(slot, 0), empty = queueAddress(slot, 1),
        value = queueAddress(slot, 2);
  auto readValue = [&] {
    // As inline asm, so that it stays after the wait (also inline asm).
    return inlinePtx("ld.shared.u32 $0, [$1];", "=r,r", {value}, i32t);
  };
  if (inConsumer) {
    waitParity(full, phase);
    Value t = readValue();
    // Once every lane of the warp has its copy, lane 0 frees the slot.
    inlinePtx("bar.warp.sync -1;", "~{memory}", {});
    Value lane0 = b.create<arith::CmpIOp>(
        loc(), arith::CmpIPredicate::eq,
        b.create<arith::AndIOp>(loc(), tid, i32(31)), i32(0));
    auto ifLane0 = b.create<scf::IfOp>(loc(), lane0, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifLane0.thenBlock()->getTerminator());
      inlinePtx("mbarrier.arrive.shared::cta.b64 _, [$0];", "r", {empty});
    }
    dist[op.getResult()] = {t};
    return success();
  }

  Value queuePtr = get(op.getQueue())[0];
  Type i64t = b.getI64Type();
  Value queue = b.create<LLVM::PtrToIntOp>(loc(), i64t, queuePtr);
  Value total = get(op.getTotal())[0];
  leaderOnly([&] {
    waitParity(empty, b.create<arith::XOrIOp>(loc(), phase, i32(1)));
    Value t = inlinePtx("atom.relaxed.gpu.global.add.u32 $0, [$1], 1;", "=r,l",
                        {queue}, i32t);
    inlinePtx("st.shared.u32 [$0], $1;", "r,r", {value, t});
    inlinePtx("mbarrier.arrive.shared::cta.b64 _, [$0];", "r", {full});
    Value done =
        b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::uge, t, total);
    auto ifDone = b.create<scf::IfOp>(loc(), done, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifDone.thenBlock()->getTerminator());
    Value finished = b.create<arith::AddIOp>(
        loc(), queue,
        b.create<arith::ConstantOp>(loc(), b.getI64IntegerAttr(4)));
    Value before = inlinePtx("atom.acq_rel.gpu.global.add.u32 $0, [$1], 1;",
                             "=r,l", {finished}, i32t);
    Value programs = b.create<arith::IndexCastOp>(
        loc(), i32t, b.create<gpu::GridDimOp>(loc(), gpu::Dimension::x));
    Value last = b.create<arith::CmpIOp>(
        loc(), arith::CmpIPredicate::eq, before,
        b.create<arith::SubIOp>(loc(), programs, i32(1)));
    auto ifLast = b.create<scf::IfOp>(loc(), last, /*withElse=*/false);
    b.setInsertionPoint(ifLast.thenBlock()->getTerminator());
    inlinePtx("st.relaxed.gpu.global.v2.u32 [$0], {$1, $1};", "l,r",
              {queue, i32(0)});
  });
  // The rest of the producer warp reads what its leader took.
  inlinePtx("bar.warp.sync -1;", "~{memory}", {});
  dist[op.getResult()] = {readValue()};
  return success();
}

void Distributor::populateTileQueuePatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerNextTile);
  p.add(&Distributor::lowerTurnWait);
  p.add(&Distributor::lowerTurnPass);
}
