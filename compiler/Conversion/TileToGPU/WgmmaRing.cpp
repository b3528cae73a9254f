//===- WgmmaRing.cpp - The TMA ring and warpgroup MMAs (sm_90a) -----------===//
//
// Lowers the ops tile-pipeline-tma makes: mbarrier set-up and waits, TMA
// copies into the shared-memory ring, and asynchronous wgmma on the ring's
// stages; plus tile.desc_fields, the plain fields of a descriptor block.
//
// Instructions without a stable NVVM op across MLIR versions (mbarrier,
// cp.async.bulk.tensor, wgmma) are emitted as inline PTX: the strings below
// are the whole contract with ptxas, which makes them easy to audit.
//
// Shared memory: the ring starts at the first 1024-byte boundary of the
// kernel's shared memory (the 128-byte swizzle repeats every 1024 bytes and
// wgmma descriptors assume that alignment); stage s occupies
// [s * stage_bytes, (s + 1) * stage_bytes), the mbarriers (8 bytes each)
// follow the last stage.
//
// wgmma operands: each ring_copy stores a [rows, cols] block as cols / 64
// panels of [rows, 64] elements with 128-byte rows, swizzled by TMA. A
// shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format")
// holds the start address, the leading byte offset (LBO), the stride byte
// offset (SBO) and the swizzle mode. With 128-byte swizzling:
//   K-major operand (rows of A, or rows of B^T, contiguous in K): 8-row
//     groups are 1024 bytes apart (SBO); each 16-wide K step starts 32 bytes
//     further into the 128-byte row, or in the next panel.
//   MN-major operand (the block holds K rows of M or N elements): 8-row K
//     groups are 1024 bytes apart (SBO), 64-element panels of M or N are one
//     panel apart (LBO = K * 128); a K step starts 16 rows (2048 bytes) on.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

Value Distributor::inlinePtx(StringRef text, StringRef constraints,
                             ValueRange args, Type result) {
  MLIRContext *ctx = b.getContext();
  auto op = LLVM::InlineAsmOp::create(
      b, loc(), result, args, text, constraints, /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT), ArrayAttr());
  return result ? op.getResult(0) : Value();
}

void Distributor::leaderOnly(llvm::function_ref<void()> body) {
  auto ifOp = b.create<scf::IfOp>(loc(), leader, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

Value Distributor::ringStage(Value stage, int64_t offset) {
  Value at = b.create<arith::MulIOp>(loc(), stage, i32(ringStageBytes));
  return b.create<arith::AddIOp>(
      loc(), ringBase, b.create<arith::AddIOp>(loc(), at, i32(offset)));
}

Value Distributor::ringBarrier(Value stage) {
  Value at = b.create<arith::MulIOp>(loc(), stage, i32(8));
  return b.create<arith::AddIOp>(
      loc(), ringBase,
      b.create<arith::AddIOp>(loc(), at, i32(ringStages * ringStageBytes)));
}

LogicalResult Distributor::lowerDescFields(DescFieldsOp op) {
  // Bytes 128..159 of the block: base, rows, cols, ld as i64.
  Value block = get(op.getDesc())[0];
  Type i64t = b.getI64Type(), i8t = b.getI8Type();
  auto field = [&](int64_t i) -> Value {
    Value p = b.create<LLVM::GEPOp>(loc(), block.getType(), i8t, block,
                                    ArrayRef<LLVM::GEPArg>{128 + 8 * i});
    return b.create<LLVM::LoadOp>(loc(), i64t, p, 8, false, false,
                                  /*invariant=*/true);
  };
  dist[op.getBase()] = {
      b.create<LLVM::IntToPtrOp>(loc(), block.getType(), field(0))};
  Type i32t = b.getI32Type();
  dist[op.getRows()] = {b.create<arith::TruncIOp>(loc(), i32t, field(1))};
  dist[op.getCols()] = {b.create<arith::TruncIOp>(loc(), i32t, field(2))};
  dist[op.getLd()] = {b.create<arith::TruncIOp>(loc(), i32t, field(3))};
  return success();
}

LogicalResult Distributor::lowerRingInit(RingInitOp) {
  // Whatever used shared memory before must be done with it: TMA copies
  // start writing the ring right after.
  b.create<gpu::BarrierOp>(loc());
  leaderOnly([&] {
    for (int64_t s = 0; s < ringStages; ++s)
      inlinePtx("mbarrier.init.shared::cta.b64 [$0], 1;", "r",
                {ringBarrier(i32(s))});
    // Make the initialized barriers visible to the TMA unit.
    inlinePtx("fence.mbarrier_init.release.cluster;", "", {});
  });
  b.create<gpu::BarrierOp>(loc());
  return success();
}

LogicalResult Distributor::lowerRingExpect(RingExpectOp op) {
  Value bar = ringBarrier(get(op.getStage())[0]);
  leaderOnly([&] {
    inlinePtx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
              {bar, i32(op.getBytes())});
  });
  return success();
}

LogicalResult Distributor::lowerRingCopy(RingCopyOp op) {
  Value stage = get(op.getStage())[0];
  Value bar = ringBarrier(stage);
  Value desc = b.create<LLVM::PtrToIntOp>(loc(), b.getI64Type(),
                                          get(op.getDesc())[0]);
  Value row = get(op.getRow())[0], col = get(op.getCol())[0];
  int64_t rows = op.getRows(), panels = op.getCols() / 64;
  SmallVector<Value> dst, cols;
  for (int64_t q = 0; q < panels; ++q) {
    dst.push_back(ringStage(stage, op.getOffset() + q * rows * 128));
    cols.push_back(b.create<arith::AddIOp>(loc(), col, i32(64 * q)));
  }
  leaderOnly([&] {
    // Coordinates are innermost first; out-of-range elements read as 0.
    for (int64_t q = 0; q < panels; ++q)
      inlinePtx("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
                "complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
                "r,l,r,r,r", {dst[q], desc, cols[q], row, bar});
  });
  return success();
}

LogicalResult Distributor::lowerRingWait(RingWaitOp op) {
  // Labels inside a { } block are local to it in PTX, so every inlined copy
  // may reuse the name.
  inlinePtx("{\n.reg .pred p;\nring_wait_retry:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
            "@!p bra ring_wait_retry;\n}",
            "r,r", {ringBarrier(get(op.getStage())[0]), get(op.getPhase())[0]});
  return success();
}

/// A 128-byte-swizzle shared-memory matrix descriptor for address `addr`.
static Value matrixDescriptor(OpBuilder &b, Location l, Value addr,
                              int64_t lbo, int64_t sbo) {
  Type i64t = b.getI64Type();
  auto c64 = [&](uint64_t v) {
    return b.create<arith::ConstantOp>(l, b.getI64IntegerAttr(int64_t(v)));
  };
  Value a = b.create<arith::ExtUIOp>(l, i64t, addr);
  a = b.create<arith::AndIOp>(l, b.create<arith::ShRUIOp>(l, a, c64(4)),
                              c64(0x3FFF));
  uint64_t fixed = (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
                   (uint64_t((sbo >> 4) & 0x3FFF) << 32) | (uint64_t(1) << 62);
  return b.create<arith::OrIOp>(l, a, c64(fixed));
}

LogicalResult Distributor::lowerRingDot(RingDotOp op) {
  auto shape = shapeOf(op.getType());
  int64_t m = shape[0], n = shape[1], k = op.getK();
  auto ml = mmaLayout({m, n});
  if (failed(ml) || (*ml)->warpsM != numThreads / 32 || (*ml)->repM != 1)
    return op.emitOpError("needs one 16-row strip per warp, got [")
           << m << ", " << n << "] over " << numThreads / 32 << " warps";
  MmaLayout &L = **ml;
  Type e = op.getOperandType();
  MLIRContext *ctx = b.getContext();
  Type f32t = b.getF32Type();
  Elems acc = evalAt(op.getAcc(), L.coords);
  int64_t h = int64_t(acc.size()); // n / 2 f32 per thread.

  Value stage = get(op.getStage())[0];
  Value aBase = ringStage(stage, op.getAOffset());
  Value bBase = ringStage(stage, op.getBOffset());
  // The warpgroup's 64-row strip of A.
  Value wg = b.create<arith::ShRUIOp>(loc(), tid, i32(7));
  bool aK = op.getAKmajor(), bK = op.getBKmajor();
  Value aStrip = b.create<arith::MulIOp>(
      loc(), wg, i32(aK ? 64 * 128 : k * 128));
  aBase = b.create<arith::AddIOp>(loc(), aBase, aStrip);

  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" +
                     std::to_string(h + 2) +
                     ", 0;\nwgmma.mma_async.sync.aligned.m64n" +
                     std::to_string(n) + "k16.f32." +
                     (e.isBF16() ? "bf16.bf16" : "f16.f16") + " {";
  std::string cons;
  for (int64_t i = 0; i < h; ++i) {
    text += (i ? ", $" : "$") + std::to_string(i);
    cons += "=f,";
  }
  text += "}, $" + std::to_string(h) + ", $" + std::to_string(h + 1) +
          ", p, 1, 1, " + (aK ? "0" : "1") + ", " + (bK ? "0" : "1") +
          ";\n}";
  cons += "l,l,r";
  for (int64_t i = 0; i < h; ++i)
    cons += "," + std::to_string(i);
  auto accStruct =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(h, f32t));

  inlinePtx("wgmma.fence.sync.aligned;", "", {});
  for (int64_t kk = 0; kk < k / 16; ++kk) {
    int64_t panel = kk * 16 / 64, inPanel = (kk * 16) % 64 * 2;
    Value aAddr, bAddr;
    int64_t aLbo = 16, bLbo = 16;
    if (aK) {
      aAddr = b.create<arith::AddIOp>(loc(), aBase,
                                      i32(panel * m * 128 + inPanel));
    } else {
      aAddr = b.create<arith::AddIOp>(loc(), aBase, i32(kk * 16 * 128));
      aLbo = k * 128;
    }
    if (bK) {
      bAddr = b.create<arith::AddIOp>(loc(), bBase,
                                      i32(panel * n * 128 + inPanel));
    } else {
      bAddr = b.create<arith::AddIOp>(loc(), bBase, i32(kk * 16 * 128));
      bLbo = k * 128;
    }
    SmallVector<Value> args = {
        matrixDescriptor(b, loc(), aAddr, aLbo, 1024),
        matrixDescriptor(b, loc(), bAddr, bLbo, 1024), i32(1)};
    args.append(acc.begin(), acc.end());
    Value d = inlinePtx(text, cons, args, accStruct);
    for (int64_t i = 0; i < h; ++i)
      acc[i] = b.create<LLVM::ExtractValueOp>(loc(), d, ArrayRef<int64_t>{i});
  }
  inlinePtx("wgmma.commit_group.sync.aligned;", "", {});
  // The previous iteration's group is done once at most this one is
  // pending; after the block barrier every warpgroup is past it, so the
  // stage it read may be refilled.
  inlinePtx("wgmma.wait_group.sync.aligned 1;", "", {});
  b.create<gpu::BarrierOp>(loc());
  dist[op.getResult()] = acc;
  assigned[op.getResult()] = &L.coords;
  return success();
}

LogicalResult Distributor::lowerRingDrain(RingDrainOp op) {
  const Coords *at = preferredLayout(op.getAcc());
  if (!at)
    return op.emitOpError("accumulator does not come from tile.ring_dot");
  Elems acc = evalAt(op.getAcc(), *at);
  int64_t h = int64_t(acc.size());
  // The wait names every accumulator register (tied in and out), so no use
  // of them can be scheduled before it.
  std::string cons;
  for (int64_t i = 0; i < h; ++i)
    cons += "=f,";
  for (int64_t i = 0; i < h; ++i)
    cons += (i ? "," : "") + std::to_string(i);
  auto st = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(h, b.getF32Type()));
  Value d = inlinePtx("wgmma.wait_group.sync.aligned 0;", cons, acc, st);
  for (int64_t i = 0; i < h; ++i)
    acc[i] = b.create<LLVM::ExtractValueOp>(loc(), d, ArrayRef<int64_t>{i});
  dist[op.getResult()] = acc;
  assigned[op.getResult()] = at;
  return success();
}
