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
// [s * stage_bytes, (s + 1) * stage_bytes); the S `full` mbarriers (8 bytes
// each; one arrival, by the thread issuing the copies, plus the copies'
// bytes) follow the last stage, then the S `empty` ones (one arrival per
// warp: lane 0 releases a stage after its warpgroup's MMAs on it ended).
// One thread issues the copies, waiting on `empty` before refilling, so no
// block-wide barrier is needed in the loop: thread 0 of the producer warp
// (group) in warp-specialized kernels (tile.warp_specialize: an if/else on
// the thread id, with setmaxnreg in each branch), else thread 0. After the
// split the consumers' barriers are named barrier 1 over their own threads,
// their shared-memory exchanges sit after the ring (the producer may be
// refilling it), and the ring's running count (tile.ring_base) is an i32
// alloca that LLVM keeps in a register.
//
// Clusters (@cluster(C), C > 1): each `empty` mbarrier counts the consumer
// warps of all C programs, and a consumer warp releases a stage in its own
// program and, through `mapa` and a remote arrive, in the others: a
// multicast copy refills that stage in all of them at once. The ranks split
// a multicast block's panels (rank q % C issues panel q) and each copy
// signals the `full` mbarrier at the same offset in every program, whose own
// leader armed it with the whole stage's bytes. All threads of the cluster
// meet (barrier.cluster) after the mbarriers are initialized, before any
// remote arrive or copy, and again before exit, since a peer may still
// arrive on this program's mbarriers.
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

Value Distributor::ringBarrier(Value stage, bool empty) {
  Value at = b.create<arith::MulIOp>(loc(), stage, i32(8));
  int64_t base = empty ? smem.emptyBarriersAt : smem.fullBarriersAt;
  return b.create<arith::AddIOp>(loc(), ringBase,
                                 b.create<arith::AddIOp>(loc(), at, i32(base)));
}

void Distributor::waitParity(Value bar, Value phase) {
  // Labels inside a { } block are local to it in PTX, so every inlined copy
  // may reuse the name. try_wait (sm_90) suspends the thread for a while
  // before it fails; test_wait, all sm_80 has, returns at once.
  inlinePtx(sm90 ? "{\n.reg .pred p;\nring_wait_retry:\n"
                   "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
                   "@!p bra ring_wait_retry;\n}"
                 : "{\n.reg .pred p;\nring_wait_retry:\n"
                   "mbarrier.test_wait.parity.shared::cta.b64 p, [$0], $1;\n"
                   "@!p bra ring_wait_retry;\n}",
            "r,r", {bar, phase});
}

/// The accumulator layout of the ring's wgmmas for an [M, N] tile, or null
/// when M is not 64 or 128 rows per warpgroup. Warpgroup g owns rows
/// [g * M/G, (g + 1) * M/G) as R = M / (64 G) m64 instructions; in each,
/// warp q of the group holds rows 16 q .. 16 q + 15 in the m16n8 C-fragment
/// pattern: slot (r, j, e) is
///   row = g M/G + 64 r + 16 q + lane / 4 + 8 (e / 2),
///   col = 8 j + 2 (lane % 4) + e % 2,
/// the order of wgmma's accumulator registers.
const Coords *Distributor::wgmmaLayout(ArrayRef<int64_t> shape) {
  int64_t m = shape[0], n = shape[1];
  std::optional<int64_t> groups = wgmmaGroups(m, n, numThreads);
  if (!groups)
    return nullptr;
  int64_t reps = m / (64 * *groups);
  auto key = std::make_pair(m, n);
  if (auto it = wgmmaLayouts.find(key); it != wgmmaLayouts.end())
    return it->second.get();
  auto c = std::make_unique<Coords>();
  c->shape = {m, n};
  Type i32t = entry.getI32Type();
  auto k = [&](int64_t v) { return cst(v, i32t); };
  Location l = loc();
  Value lane = entry.create<arith::AndIOp>(l, tid, k(31));
  Value warp = entry.create<arith::ShRUIOp>(l, tid, k(5));
  Value g = entry.create<arith::ShRUIOp>(l, warp, k(2));
  Value q = entry.create<arith::AndIOp>(l, warp, k(3));
  // Operands named in the order g++ builds them (see ExpandDescLoad.cpp).
  Value laneRow = entry.create<arith::ShRUIOp>(l, lane, k(2));
  Value warpRow = entry.create<arith::MulIOp>(l, q, k(16));
  Value groupRow = entry.create<arith::MulIOp>(l, g, k(64 * reps));
  Value row0 = entry.create<arith::AddIOp>(
      l, entry.create<arith::AddIOp>(l, groupRow, warpRow), laneRow);
  Value col0 = entry.create<arith::ShLIOp>(
      l, entry.create<arith::AndIOp>(l, lane, k(3)), k(1));
  for (int64_t r = 0; r < reps; ++r)
    for (int64_t j = 0; j < n / 8; ++j)
      for (int64_t e = 0; e < 4; ++e)
        c->at.push_back(
            {entry.create<arith::AddIOp>(l, row0, k(64 * r + 8 * (e / 2))),
             entry.create<arith::AddIOp>(l, col0, k(8 * j + e % 2))});
  return (wgmmaLayouts[key] = std::move(c)).get();
}

LogicalResult Distributor::lowerDescFields(DescFieldsOp op) {
  // Bytes 128..159 of the block: base, rows, cols, ld as i64.
  Value block = get(op.getDesc())[0];
  Type i64t = b.getI64Type(), i8t = b.getI8Type();
  auto field = [&](int64_t i) -> Value {
    Value p =
        b.create<LLVM::GEPOp>(loc(), block.getType(), i8t, block,
                              ArrayRef<LLVM::GEPArg>{int32_t(128 + 8 * i)});
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
  barrier();
  leaderOnly([&] {
    // In a cluster every program's consumer warps release every program's
    // stage: a multicast copy refills all of them at once.
    for (int64_t s = 0; s < ringStages; ++s) {
      // `full`: the copying thread's arrival (TMA), or every copying
      // thread's (the block's, or a producer warpgroup's), once per copy op
      // of the stage (cp.async.mbarrier.arrive.noinc, tile.ring_copy_ptrs).
      if (ringThreadCopies)
        inlinePtx("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
                  {ringBarrier(i32(s), false),
                   i32((specialized ? producerThreads : numThreads) *
                       ringThreadCopies)});
      else
        inlinePtx("mbarrier.init.shared::cta.b64 [$0], 1;", "r",
                  {ringBarrier(i32(s), false)});
      inlinePtx("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
                {ringBarrier(i32(s), true),
                 i32(clusterSize * numThreads / 32)});
    }
    if (tileQueue)
      initTileQueue();
    // Make the initialized barriers visible to the TMA unit (and to the
    // cluster's other programs). Without TMA (sm_80 .. sm_89: cp.async
    // arrives through the generic proxy) the barrier below is enough.
    if (sm90)
      inlinePtx("fence.mbarrier_init.release.cluster;", "", {});
  });
  barrier();
  // No program may arrive on, or copy into, another's ring before that one
  // initialized its mbarriers.
  if (clusterSize > 1)
    clusterSync();
  return success();
}

Value Distributor::clusterPosition(bool rank) {
  // Clusters are consecutive blocks along x (cluster dims C x 1 x 1).
  Value x = b.create<arith::IndexCastOp>(
      loc(), b.getI32Type(),
      b.create<gpu::BlockIdOp>(loc(), gpu::Dimension::x));
  if (rank)
    return b.create<arith::RemUIOp>(loc(), x, i32(clusterSize));
  return b.create<arith::DivUIOp>(loc(), x, i32(clusterSize));
}

void Distributor::clusterSync() {
  inlinePtx("barrier.cluster.arrive.release;\n"
            "barrier.cluster.wait.acquire;",
            "~{memory}", {});
}

LogicalResult Distributor::lowerRingExpect(RingExpectOp op) {
  Value bar = ringBarrier(get(op.getStage())[0], false);
  leaderOnly([&] {
    inlinePtx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r",
              {bar, i32(op.getBytes())});
  });
  return success();
}

LogicalResult Distributor::lowerRingCopy(RingCopyOp op) {
  ringHolds = true;
  Value stage = get(op.getStage())[0];
  Value bar = ringBarrier(stage, false);
  Value desc =
      b.create<LLVM::PtrToIntOp>(loc(), b.getI64Type(), get(op.getDesc())[0]);
  Value row = get(op.getRow())[0], col = get(op.getCol())[0];
  int64_t rows = op.getRows();
  // Swizzled: panels of 64 columns (one of 32 at the 64-byte swizzle);
  // plain: one box of all columns.
  int64_t panelCols = op.getLayout().panelCols(op.getCols());
  int64_t panels = op.getCols() / panelCols;
  SmallVector<Value> dst, cols;
  for (int64_t q = 0; q < panels; ++q) {
    dst.push_back(ringStage(stage, op.getOffset() + q * rows * panelCols * 2));
    cols.push_back(b.create<arith::AddIOp>(loc(), col, i32(panelCols * q)));
  }
  if (op.getMulticast()) {
    // The cluster's programs split the block's panels (panel q is issued
    // by rank q % C) and each copy lands in every program, at the same
    // shared-memory offsets, signalling each one's mbarrier.
    Value rank = clusterPosition(/*rank=*/true);
    Value mask = b.create<arith::ConstantOp>(
        loc(), b.getI16IntegerAttr(int16_t((1 << clusterSize) - 1)));
    Value saved = leader;
    for (int64_t q = 0; q < panels; ++q) {
      leader = b.create<arith::AndIOp>(
          loc(), saved,
          b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::eq, rank,
                                  i32(q % clusterSize)));
      leaderOnly([&] {
        inlinePtx("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
                  "complete_tx::bytes.multicast::cluster [$0], [$1, {$2, $3}], "
                  "[$4], $5;",
                  "r,l,r,r,r,h", {dst[q], desc, cols[q], row, bar, mask});
      });
    }
    leader = saved;
    return success();
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

/// Every thread copies the runs of the block it owns in the canonical
/// layout, `width` elements at a time, to their place in the op's shared
/// layout, as TMA would write the block: panel col / P ([rows, P] elements,
/// rows of 2P bytes; P = 64 with the 128-byte swizzle, 32 with the 64-byte
/// one), and in it row r's 16-byte unit u at unit u ^ (r % 8), or
/// u ^ ((r / 2) % 4) (the swizzle patterns repeat every 1024 and 512
/// bytes: the ring and its operands are 1024-byte aligned). cp.async with
/// a source size of 0 writes zeros.
LogicalResult Distributor::lowerRingCopyPtrs(RingCopyPtrsOp op) {
  auto shape = shapeOf(op.getPtrs().getType());
  int64_t rows = op.getRows(), cols = op.getCols();
  const int64_t panelCols = op.getLayout().getSwizzle() / 2;
  if (!ringThreadCopies || shape.size() != 2 || shape[0] != rows ||
      shape[1] != cols || !panelCols || cols % panelCols)
    return op.emitError("ring_copy_ptrs: a [rows, cols] block of whole "
                        "swizzled panels, in a ring with thread_copies");
  const int64_t rowBytes = 2 * panelCols;
  ringHolds = true;
  Layout lay = layoutOf(shape);
  // Elements are 16-bit (the pass takes f16 and bf16 operands only); a
  // copy moves 4, 8 or 16 bytes of one run under one mask value.
  int64_t width = accessWidth(op.getPtrs(), op.getMask(),
                              std::min<int64_t>(lay.vec, 8), 2);
  if (width < 2)
    return op.emitError("ring_copy_ptrs: the pointers are not in runs of "
                        "two or more aligned elements under one mask value "
                        "(cp.async copies 4 bytes at least)");
  const Coords &at = canonical(shape);
  Elems ptrs = canonicalElems(op.getPtrs());
  Elems masks = op.getMask() ? canonicalElems(op.getMask()) : Elems();
  Value stage = get(op.getStage())[0];
  Value base = ringStage(stage, op.getOffset());
  std::string text = "cp.async." + std::string(width == 8 ? "cg" : "ca") +
                     ".shared.global [$0], [$1], " +
                     std::to_string(2 * width) + ", $2;";
  // Threads past the layout's own hold copies of lower threads' elements:
  // they write the same bytes again, which is harmless, and still arrive.
  for (int64_t slot = 0; slot < int64_t(ptrs.size()); slot += width) {
    Value r = at.at[slot][0], c = at.at[slot][1];
    Value panel = b.create<arith::DivUIOp>(loc(), c, i32(panelCols));
    Value inRow = b.create<arith::RemUIOp>(loc(), c, i32(panelCols));
    Value rowBits =
        rowBytes == 128
            ? b.create<arith::AndIOp>(loc(), r, i32(7)).getResult()
            : b.create<arith::AndIOp>(
                   loc(), b.create<arith::ShRUIOp>(loc(), r, i32(1)), i32(3))
                  .getResult();
    Value unit = b.create<arith::XOrIOp>(
        loc(), b.create<arith::ShRUIOp>(loc(), inRow, i32(3)), rowBits);
    Value byte = b.create<arith::AddIOp>(
        loc(),
        b.create<arith::AddIOp>(
            loc(), b.create<arith::MulIOp>(loc(), panel, i32(rows * rowBytes)),
            b.create<arith::MulIOp>(loc(), r, i32(rowBytes))),
        b.create<arith::AddIOp>(
            loc(), b.create<arith::ShLIOp>(loc(), unit, i32(4)),
            b.create<arith::ShLIOp>(
                loc(), b.create<arith::AndIOp>(loc(), inRow, i32(7)), i32(1))));
    Value dst = b.create<arith::AddIOp>(loc(), base, byte);
    Value srcAddr =
        b.create<LLVM::PtrToIntOp>(loc(), b.getI64Type(), ptrs[slot]);
    Value size = i32(2 * width);
    if (!masks.empty())
      size = b.create<arith::SelectOp>(loc(), masks[slot], size, i32(0));
    inlinePtx(text, "r,l,r", {dst, srcAddr, size});
  }
  inlinePtx("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];", "r",
            {ringBarrier(stage, false)});
  return success();
}

LogicalResult Distributor::lowerRingArrive(RingArriveOp op) {
  if (!ringThreadCopies)
    return op.emitError("ring_arrive: only in a ring with thread_copies");
  inlinePtx("mbarrier.arrive.shared::cta.b64 _, [$0];", "r",
            {ringBarrier(get(op.getStage())[0], false)});
  return success();
}

LogicalResult Distributor::lowerRingWait(RingWaitOp op) {
  waitParity(ringBarrier(get(op.getStage())[0], false), get(op.getPhase())[0]);
  // cp.async wrote the stage through the generic proxy; wgmma reads it
  // through the async proxy (ldmatrix, without wgmma, reads it through the
  // generic one).
  if (ringThreadCopies && sm90)
    inlinePtx("fence.proxy.async.shared::cta;", "", {});
  return success();
}

LogicalResult Distributor::lowerRingAcquire(RingAcquireOp op) {
  Value bar = ringBarrier(get(op.getStage())[0], true);
  Value phase = get(op.getPhase())[0];
  if (ringThreadCopies) // Every thread refills its part of the stage.
    waitParity(bar, phase);
  else
    leaderOnly([&] { waitParity(bar, phase); });
  return success();
}

/// A shared-memory matrix descriptor for address `addr` in panels whose
/// rows are `rowBytes` long and swizzled at that width (128 or 64 bytes).
static Value matrixDescriptor(OpBuilder &b, Location l, Value addr, int64_t lbo,
                              int64_t sbo, int64_t rowBytes = 128) {
  Type i64t = b.getI64Type();
  auto c64 = [&](uint64_t v) {
    return b.create<arith::ConstantOp>(l, b.getI64IntegerAttr(int64_t(v)));
  };
  Value a = b.create<arith::ExtUIOp>(l, i64t, addr);
  a = b.create<arith::AndIOp>(l, b.create<arith::ShRUIOp>(l, a, c64(4)),
                              c64(0x3FFF));
  uint64_t fixed = (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
                   (uint64_t((sbo >> 4) & 0x3FFF) << 32) |
                   (uint64_t(rowBytes == 128 ? 1 : 2) << 62);
  return b.create<arith::OrIOp>(l, a, c64(fixed));
}

LogicalResult Distributor::lowerRingDot(RingDotOp op) {
  if (op.getMmaSync())
    return lowerRingMmaSync(op);
  if (!sm90)
    return op.emitOpError("is a wgmma, which needs sm_90a (mma_sync reads "
                          "the ring on other targets)");
  auto shape = shapeOf(op.getType());
  int64_t m = shape[0], n = shape[1], k = op.getK();
  const Coords *layout = wgmmaLayout({m, n});
  if (!layout)
    return op.emitOpError("needs 64 or 128 rows per warpgroup, got [")
           << m << ", " << n << "] over " << numThreads / 32 << " warps";
  int64_t groups = numThreads / 128, reps = m / (64 * groups);
  Type e = op.getOperandType();
  MLIRContext *ctx = b.getContext();
  Type f32t = b.getF32Type();
  Elems acc = evalAt(op.getAcc(), *layout);
  int64_t h = n / 2; // f32 per thread per m64 instruction.

  Value stage = get(op.getStage())[0];
  Value aBase = ringStage(stage, op.getAOffset());
  Value bBase = ringStage(stage, op.getBOffset());
  // The warpgroup's strip of A: 64 * reps rows, i.e. reps 64-row blocks
  // (K-major) or reps 64-column panels (M-major).
  Value wg = b.create<arith::ShRUIOp>(loc(), tid, i32(7));
  bool aK = op.getAKmajor(), bK = op.getBKmajor();
  // Sparse A (tile.sparse_dot): compressed values K-major at a_offset, i16
  // metadata [m, k/16] unswizzled at meta_offset (rows meta_pitch i16
  // apart); k32 instructions.
  std::optional<uint64_t> metaOffset = op.getMetaOffset();
  bool sparse = metaOffset.has_value();
  // A's panel rows, as its shared layout says: 128 bytes (64 columns), or
  // 64 for the single 32-column panel of a K = 64 sparse step. An M-major
  // A is read in panels of 64 columns.
  int64_t aRow = 128;
  if (SharedLayoutAttr al = op.getALayoutAttr()) {
    aRow = al.getSwizzle();
    if (!aK && aRow != 128)
      return op.emitOpError("reads an M-major A in panels of 64 columns (the "
                            "128-byte swizzle), not ")
             << al;
  }
  int64_t bRowBytes = op.getBLayout().getSwizzle();
  if (bRowBytes != 128 && !(bK && bRowBytes == 64))
    return op.emitOpError("reads B in panels of 64 columns (the 128-byte "
                          "swizzle), or K-major in one of 32 (64-byte), not ")
           << op.getBLayout();
  Value aStrip = b.create<arith::MulIOp>(
      loc(), wg, i32(reps * (aK ? 64 * aRow : k * 128)));
  aBase = b.create<arith::AddIOp>(loc(), aBase, aStrip);

  // Register A (tile.ring_dot's `a`): held in the accumulator layout of
  // an [M, K] wgmma, which is wgmma's A-fragment layout: for K step s,
  // column groups j = 2 s and 2 s + 1 give registers a0a1, a2a3 (rows r,
  // r + 8 of columns 16 s + 2 (lane % 4)) and a4a5, a6a7 (8 columns on),
  // so consecutive element pairs are the instruction's b32 registers in
  // order: 4 per K step of each m64 block.
  SmallVector<Value> aRegs;
  if (Value a = op.getA()) {
    const Coords *al = wgmmaLayout({m, k});
    if (!al || k % 16)
      return op.emitOpError("register A [")
             << m << ", " << k << "] needs 64 or 128 rows per warpgroup "
             << "and K a multiple of 16";
    Elems av = evalAt(a, *al);
    for (size_t i = 0; i + 1 < av.size(); i += 2)
      aRegs.push_back(b.create<LLVM::BitcastOp>(
          loc(), b.getI32Type(), packVector(b, loc(), {av[i], av[i + 1]})));
  }
  bool regA = !aRegs.empty();

  int64_t kStep = sparse ? 32 : 16;
  if (sparse) // Sparse wgmma with f16/bf16 appeared in PTX ISA 8.2.
    minPtx = std::max<int64_t>(minPtx, 82);

  // One m64nNk16 (sparse: m64nNk32) wgmma: h accumulators in and out
  // (tied), the two matrix descriptors, scale-d = 1 (accumulate) as a
  // predicate, and for sparse A its metadata register with sparsity
  // selector 0.
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" +
                     std::to_string(h + (regA ? 5 : 2)) +
                     ", 0;\nwgmma.mma_async" +
                     (sparse ? ".sp" : "") + ".sync.aligned.m64n" +
                     std::to_string(n) + "k" + std::to_string(kStep) + ".f32." +
                     (e.isBF16() ? "bf16.bf16" : "f16.f16") + " {";
  std::string cons;
  for (int64_t i = 0; i < h; ++i) {
    text += (i ? ", $" : "$") + std::to_string(i);
    cons += "=f,";
  }
  if (regA) {
    // {a0..a3}, B's descriptor, scale-d; no transpose for a register A.
    text += "}, {$" + std::to_string(h) + ", $" + std::to_string(h + 1) +
            ", $" + std::to_string(h + 2) + ", $" + std::to_string(h + 3) +
            "}, $" + std::to_string(h + 4) + ", p, 1, 1, " + (bK ? "0" : "1") +
            ";\n}";
    cons += "r,r,r,r,l,r";
  } else {
    text += "}, $" + std::to_string(h) + ", $" + std::to_string(h + 1) +
            (sparse ? ", $" + std::to_string(h + 3) + ", 0" : std::string()) +
            ", p, 1, 1, " + (aK ? "0" : "1") + ", " + (bK ? "0" : "1") +
            ";\n}";
    cons += sparse ? "l,l,r,r" : "l,l,r";
  }
  for (int64_t i = 0; i < h; ++i)
    cons += "," + std::to_string(i);
  auto accStruct =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(h, f32t));

  // Metadata (sparse): lane (g, t) of warp q supplies, for rows g and g + 8
  // of the warp's 16-row strip, the i16 of dense columns 16 (2 s + t % 2)
  // .. +15 of k32 step s: low and high half of its register. Lanes with
  // t >= 2 are not read (selector 0) and load the same values.
  // The i16 of step s sit at columns 2 s and 2 s + 1 of a row, i.e. in its
  // 32-bit word s, so a lane reads both of its rows whole (16-byte vectors:
  // K % 128 == 0, so a row is a multiple of 16 bytes, and the lanes of a
  // row share one broadcast) and takes half t % 2 of each word. All of the
  // op's metadata is in registers before its one wgmma.fence: a fence and a
  // shared-memory load before every sparse wgmma held up their issue.
  int64_t metaCols = k / 16;
  int64_t metaPitch = op.getMetaPitch().value_or(metaCols);
  SmallVector<Value> metaRegs; // [r * steps + st]
  if (sparse) {
    Value lane = b.create<arith::AndIOp>(loc(), tid, i32(31));
    Value q = b.create<arith::AndIOp>(
        loc(), b.create<arith::ShRUIOp>(loc(), tid, i32(5)), i32(3));
    Value laneRow = b.create<arith::ShRUIOp>(loc(), lane, i32(2));
    Value warpRow = b.create<arith::MulIOp>(loc(), q, i32(16));
    Value groupRow = b.create<arith::MulIOp>(loc(), wg, i32(64 * reps));
    Value row = b.create<arith::AddIOp>(
        loc(), b.create<arith::AddIOp>(loc(), groupRow, warpRow), laneRow);
    Value shift = b.create<arith::ShLIOp>(
        loc(), b.create<arith::AndIOp>(loc(), lane, i32(1)), i32(4));
    Value rowAddr = b.create<arith::AddIOp>(
        loc(), ringStage(stage, int64_t(*metaOffset)),
        b.create<arith::MulIOp>(loc(), row, i32(metaPitch * 2)));
    auto v4 = VectorType::get({4}, b.getI32Type());
    // A widened box (meta_col): the row holds metaPitch / metaCols steps'
    // metadata, and this step's starts at column meta_col, a multiple of
    // metaCols. The words are chosen with selects: a vector indexed by a
    // register would go through local memory.
    Value metaCol = op.getMetaCol() ? get(op.getMetaCol())[0] : Value();
    // The metaCols / 2 words of strip row `r0` (relative to the lane's row),
    // read as whole 16-byte vectors.
    auto rowWords = [&](int64_t r0) {
      SmallVector<Value> all;
      for (int64_t v = 0; v < (metaPitch + 7) / 8; ++v) {
        Value addr = b.create<arith::AddIOp>(loc(), rowAddr,
                                             i32((r0 * metaPitch + 8 * v) * 2));
        Value wide = b.create<arith::ExtUIOp>(loc(), b.getI64Type(), addr);
        Value ptr = b.create<LLVM::IntToPtrOp>(
            loc(), LLVM::LLVMPointerType::get(ctx, 3), wide);
        Value vec = b.create<LLVM::LoadOp>(loc(), v4, ptr, 16);
        for (int64_t j = 0; j < 4; ++j)
          all.push_back(b.create<LLVM::ExtractElementOp>(loc(), vec, i32(j)));
      }
      SmallVector<Value> words(all.begin(), all.begin() + metaCols / 2);
      for (int64_t h = 1; metaCol && h < metaPitch / metaCols; ++h) {
        Value here = b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::eq,
                                             metaCol, i32(h * metaCols));
        for (int64_t j = 0; j < metaCols / 2; ++j)
          words[j] = b.create<arith::SelectOp>(
              loc(), here, all[h * metaCols / 2 + j], words[j]);
      }
      return words;
    };
    Value low16 = i32(0xFFFF);
    for (int64_t r = 0; r < reps; ++r) {
      SmallVector<Value> lo = rowWords(r * 64), hi = rowWords(r * 64 + 8);
      for (int64_t st = 0; st < k / kStep; ++st) {
        Value l = b.create<arith::AndIOp>(
            loc(), b.create<arith::ShRUIOp>(loc(), lo[st], shift), low16);
        Value h16 = b.create<arith::ShLIOp>(
            loc(), b.create<arith::ShRUIOp>(loc(), hi[st], shift), i32(16));
        metaRegs.push_back(b.create<arith::OrIOp>(loc(), l, h16));
      }
    }
  }

  // scale-d: the first wgmma of the op accumulates unless `accumulate` is
  // false (a zero-initialized loop's first iteration); the rest always do.
  Value firstScale = i32(1);
  if (Value a = op.getAccumulate())
    firstScale = b.create<arith::ExtUIOp>(loc(), b.getI32Type(), get(a)[0]);
  // With `enabled`, the fence, the wgmmas, their commit and wait run under
  // an `if` whose else keeps the accumulators and waits for every group
  // (the one a skipped step would have waited for is then done), so the
  // stage is released after either. ptxas injected warpgroup.arrives
  // (C7519) for the other forms tried: a predicate on each wgmma, or a
  // commit (on both paths, or after them) of groups whose registers
  // merge at the branch's end.
  scf::IfOp guard = openSkippable(op, acc, "wgmma.wait_group.sync.aligned 0;");
  // Every register a wgmma reads (accumulators, metadata) is written before
  // this fence.
  inlinePtx("wgmma.fence.sync.aligned;", "", {});

  for (int64_t st = 0; st < k / kStep; ++st) {
    // A advances 16 of its own columns per step (compressed when sparse),
    // B advances kStep rows of K.
    int64_t aCol = st * 16, bRow = st * kStep;
    int64_t aPanel = aCol / (aRow / 2), aIn = aCol % (aRow / 2) * 2;
    // A K-major B's panels are bRowBytes wide: 128 bytes, or one panel of
    // 64 (a K step of 32 loaded through pointers), as A's may be.
    int64_t bPanel = bRow / (bRowBytes / 2), bIn = bRow % (bRowBytes / 2) * 2;
    Value bAddr;
    int64_t aLbo = aK ? 16 : k * 128, bLbo = 16;
    if (bK) {
      bAddr = b.create<arith::AddIOp>(loc(), bBase,
                                      i32(bPanel * n * bRowBytes + bIn));
    } else {
      bAddr = b.create<arith::AddIOp>(loc(), bBase, i32(bRow * 128));
      bLbo = k * 128;
    }
    Value bDesc =
        matrixDescriptor(b, loc(), bAddr, bLbo, 8 * bRowBytes, bRowBytes);
    for (int64_t r = 0; r < reps; ++r) {
      Value scale = st == 0 ? firstScale : i32(1);
      SmallVector<Value> args;
      if (regA) {
        auto regs = ArrayRef<Value>(aRegs).slice((r * (k / 16) + st) * 4, 4);
        args.append(regs.begin(), regs.end());
        args.append({bDesc, scale});
      } else {
        Value aAddr =
            aK ? b.create<arith::AddIOp>(loc(), aBase,
                                         i32(aPanel * m * aRow +
                                             r * 64 * aRow + aIn))
               : b.create<arith::AddIOp>(loc(), aBase,
                                         i32(r * k * 128 + aCol * 128));
        args = {matrixDescriptor(b, loc(), aAddr, aLbo, 8 * aRow, aRow), bDesc,
                scale};
      }
      if (sparse)
        args.push_back(metaRegs[r * (k / kStep) + st]);
      args.append(acc.begin() + r * h, acc.begin() + (r + 1) * h);
      Value d = inlinePtx(text, cons, args, accStruct);
      for (int64_t i = 0; i < h; ++i)
        acc[r * h + i] =
            b.create<LLVM::ExtractValueOp>(loc(), d, ArrayRef<int64_t>{i});
    }
  }
  inlinePtx("wgmma.commit_group.sync.aligned;", "", {});
  if (op.getSync()) {
    // The result is used by other ops: wait for this group itself.
    waitAccumulators(acc);
  } else {
    // The previous iteration's group is done once at most this one is
    // pending: release the stage it read. A sparse wgmma also reads its
    // metadata register asynchronously. In a loop of one ring_dot the next
    // iteration rewrites the same registers (PTX registers are per value,
    // not per iteration), so it must wait for its own group, or a group
    // still in flight reads the next step's metadata (seen on the H100:
    // 256-row 2:4 tiles came out wrong, differently each run). With
    // meta_alternates the next ring_dot is another op with its own
    // registers.
    inlinePtx(sparse && !op.getMetaAlternates()
                  ? "wgmma.wait_group.sync.aligned 0;"
                  : "wgmma.wait_group.sync.aligned 1;",
              "", {});
  }
  closeSkippable(guard, acc);
  releaseStage(get(op.getRelease())[0]);
  dist[op.getResult()] = acc;
  assigned[op.getResult()] = layout;
  return success();
}

scf::IfOp Distributor::openSkippable(RingDotOp op, const Elems &acc,
                                     StringRef elsePtx) {
  Value on = op.getEnabled();
  if (!on)
    return {};
  SmallVector<Type> types;
  for (Value v : acc)
    types.push_back(v.getType());
  auto skip = b.create<scf::IfOp>(loc(), types, get(on)[0],
                                  /*withElseRegion=*/true);
  b.setInsertionPointToStart(skip.elseBlock());
  inlinePtx(elsePtx, "", {});
  b.create<scf::YieldOp>(loc(), acc);
  b.setInsertionPointToStart(skip.thenBlock());
  return skip;
}

void Distributor::closeSkippable(scf::IfOp skip, Elems &acc) {
  if (!skip)
    return;
  b.create<scf::YieldOp>(loc(), acc);
  b.setInsertionPointAfter(skip);
  acc.assign(skip.getResults().begin(), skip.getResults().end());
}

void Distributor::waitAccumulators(Elems &acc) {
  int64_t h = int64_t(acc.size());
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
}

/// Arrives on stage `release`'s `empty` mbarrier (nothing for -1), once
/// per warp: a warp passes the (aligned) wgmma wait together.
void Distributor::releaseStage(Value release) {
  Value lane0 = b.create<arith::CmpIOp>(
      loc(), arith::CmpIPredicate::eq,
      b.create<arith::AndIOp>(loc(), tid, i32(31)), i32(0));
  auto ifOp = b.create<scf::IfOp>(
      loc(),
      b.create<arith::AndIOp>(loc(), lane0,
                              b.create<arith::CmpIOp>(loc(),
                                                      arith::CmpIPredicate::sge,
                                                      release, i32(0))),
      /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  Value bar = ringBarrier(release, true);
  inlinePtx("mbarrier.arrive.shared::cta.b64 _, [$0];", "r", {bar});
  // In a cluster, the same stage of every other program too: their
  // multicast copies write into this program's stage.
  if (clusterSize > 1) {
    Value rank = clusterPosition(/*rank=*/true);
    for (int64_t d = 1; d < clusterSize; ++d) {
      Value peer = b.create<arith::RemUIOp>(
          loc(), b.create<arith::AddIOp>(loc(), rank, i32(d)),
          i32(clusterSize));
      // CTA-scope release, as for the local arrive: what the stage's
      // readers did before is wgmma's reads, which the wait above ended.
      inlinePtx("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, $0, $1;\n"
                "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}",
                "r,r", {bar, peer});
    }
  }
}

void Distributor::barrier() {
  if (inConsumer && consumerGroups > 1)
    // Ping-pong: each group has its own barrier (1 and 2).
    inlinePtx("bar.sync $0, $1;", "r,r,~{memory}",
              {b.create<arith::AddIOp>(loc(), consumerGroup, i32(1)),
               i32(numThreads)});
  else if (inConsumer)
    // The memory clobber keeps shared-memory accesses on their side of the
    // barrier (LLVM may move loads and stores across plain side-effecting
    // asm).
    inlinePtx("bar.sync 1, $0;", "r,~{memory}", {i32(numThreads)});
  else
    b.create<gpu::BarrierOp>(loc());
}

LogicalResult Distributor::lowerRingBase(RingBaseOp op) {
  if (!ringCount)
    return op.emitOpError("needs a ring (a kernel with tile.ring)");
  dist[op.getResult()] = {
      b.create<LLVM::LoadOp>(loc(), b.getI32Type(), ringCount)};
  return success();
}

/// Whether shared memory is next used, after `op`, by a fill of the ring:
/// an scf.if (a guarded fill of the next loop's prologue) whose then-block
/// acquires a stage before anything else touches memory. Leaving the
/// scf.if that `op` ends is allowed when its other branch does no more than
/// pure work (a loop's guard, whose else yields the initial values);
/// anything else that is not pure scalar work (a loop, a store, a tile)
/// answers no. A fill waits on the stage's release by every consumer warp
/// (its empty mbarrier), so it needs no block barrier before it: attention's
/// second key pass starts without one.
static bool ringFillsNext(Operation *op) {
  Operation *cur = op->getNextNode();
  while (true) {
    for (; cur && !cur->hasTrait<OpTrait::IsTerminator>();
         cur = cur->getNextNode()) {
      if (isa<RingAdvanceOp, RingBaseOp>(cur))
        continue;
      if (auto guard = dyn_cast<scf::IfOp>(cur)) {
        for (Operation &inner : guard.getThenRegion().front()) {
          if (isa<RingAcquireOp>(inner))
            return guard.getNumResults() == 0;
          if (inner.getNumRegions() || !isMemoryEffectFree(&inner))
            return false;
        }
        return false;
      }
      if (cur->getNumRegions() || !isMemoryEffectFree(cur) ||
          llvm::any_of(cur->getResultTypes(),
                       [](Type t) { return isa<RankedTensorType>(t); }))
        return false;
    }
    Operation *parent = cur ? cur->getParentOp() : nullptr;
    auto left = dyn_cast_or_null<scf::IfOp>(parent);
    if (!left)
      return false;
    for (Region *r : {&left.getThenRegion(), &left.getElseRegion()})
      if (r != cur->getParentRegion() && !r->empty())
        for (Operation &other : r->front())
          if (other.getNumRegions() || !isMemoryEffectFree(&other))
            return false;
    cur = parent->getNextNode();
  }
}

LogicalResult Distributor::lowerRingAdvance(RingAdvanceOp op) {
  if (!ringCount)
    return op.emitOpError("needs a ring (a kernel with tile.ring)");
  Value count = b.create<LLVM::LoadOp>(loc(), b.getI32Type(), ringCount);
  b.create<LLVM::StoreOp>(
      loc(), b.create<arith::AddIOp>(loc(), count, get(op.getCount())[0]),
      ringCount);
  // Without a producer every thread refills the ring: the other warpgroups
  // may still be reading the loop's last stage, which shared memory used
  // after the loop (an exchange over the ring's bytes) must not overwrite.
  // With exchanges apart from the ring only the next loop's fills touch
  // its stages, and each waits for the stage's release.
  if (!specialized && !ringApart && !ringFillsNext(op)) {
    barrier();
    ringHolds = false;
  }
  return success();
}

LogicalResult Distributor::lowerWgmmaOperand(WgmmaOperandOp op) {
  // wgmma's accumulator layout, or with mma_sync mma.sync's (the type's).
  const Coords *layout = coordsFor(op.getType());
  if (!layout)
    return op.emitOpError("cannot hold its result in ")
           << encodingOf(op.getType())
           << " (wgmma: 64 or 128 rows per warpgroup and a multiple of 8 "
              "columns; mma.sync: 16 rows a warp and a multiple of 8)";
  dist[op.getResult()] = evalAt(op.getSrc(), *layout);
  assigned[op.getResult()] = layout;
  return success();
}

LogicalResult Distributor::lowerConsumerGroup(ConsumerGroupOp op) {
  if (!consumerGroup || !inConsumer)
    return op.emitOpError("needs the consumers of a ping-pong kernel");
  dist[op.getResult()] = {consumerGroup};
  return success();
}

/// Block threads from numThreads x consumer groups on: the producer
/// warp(group), with few registers, issues the copies (its first thread is
/// the ring's leader); the rest are the consumers, with the registers the
/// producer gave up.
LogicalResult Distributor::lowerWarpSpecialize(WarpSpecializeOp op) {
  int64_t consumerThreads = numThreads * consumerGroups;
  Value isProducer = b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::sge,
                                             blockTid, i32(consumerThreads));
  auto ifOp = b.create<scf::IfOp>(loc(), isProducer, /*withElse=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  if (auto regs = op.getProducerRegs())
    inlinePtx("setmaxnreg.dec.sync.aligned.u32 " + std::to_string(*regs) + ";",
              "", {});
  Value savedLeader = leader;
  leader = b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::eq, blockTid,
                                   i32(consumerThreads));
  memo.clear();
  if (tileQueue) {
    // The tile queue's values reach the producer's threads by a warp
    // barrier: only its first warp runs the producer's loop (its leader
    // issues everything anyway); the other warps of the group are done.
    auto firstWarp = b.create<scf::IfOp>(
        loc(),
        b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::ult, blockTid,
                                i32(consumerThreads + 32)),
        /*withElse=*/false);
    b.setInsertionPoint(firstWarp.thenBlock()->getTerminator());
  }
  inProducer = true;
  LogicalResult produced = lowerProducerTiles(op.getProducer().front());
  inProducer = false;
  if (failed(produced))
    return failure();
  leader = savedLeader;
  b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  if (auto regs = op.getConsumerRegs())
    inlinePtx("setmaxnreg.inc.sync.aligned.u32 " + std::to_string(*regs) + ";",
              "", {});
  memo.clear();
  inConsumer = true;
  LogicalResult r = lowerBlock(op.getConsumer().front());
  inConsumer = false;
  // TMA stores may still be copying out of the staging area: the block
  // must not exit (and free it) before they complete (TmaStore.cpp).
  if (succeeded(r) && tmaStoresIssued)
    leaderOnly(
        [&] { inlinePtx("cp.async.bulk.wait_group 0;", "~{memory}", {}); });
  // A program of a cluster may not exit while another may still arrive on
  // its mbarriers or copy into its ring: all meet after both roles.
  if (succeeded(r) && clusterSize > 1) {
    b.setInsertionPointAfter(ifOp);
    clusterSync();
  }
  return r;
}

LogicalResult Distributor::lowerProducerTiles(Block &producer) {
  bool tiles =
      producer.walk([](RingCopyPtrsOp) { return WalkResult::interrupt(); })
          .wasInterrupted();
  if (!tiles)
    return lowerBlock(producer);
  // Coordinates are functions of `tid` and the thread count: the
  // consumers' caches of them are set aside while the producer's are built.
  int64_t consumerThreads = numThreads * consumerGroups;
  Value consumerTid = tid;
  tid = entry.create<arith::SubIOp>(loc(), blockTid, i32(consumerThreads));
  std::swap(numThreads, producerThreads);
  decltype(canonicalCoords) coords;
  decltype(tidTerms) terms;
  decltype(threadValues) values;
  std::swap(canonicalCoords, coords);
  std::swap(tidTerms, terms);
  std::swap(threadValues, values);
  std::optional<TileTypeConverter> consumerTypes;
  std::swap(converter, consumerTypes);
  converter.emplace(src.getContext(), numThreads);
  LogicalResult r = lowerBlock(producer);
  std::swap(converter, consumerTypes);
  std::swap(threadValues, values);
  std::swap(tidTerms, terms);
  std::swap(canonicalCoords, coords);
  std::swap(numThreads, producerThreads);
  tid = consumerTid;
  memo.clear();
  return r;
}

LogicalResult Distributor::lowerRingDrain(RingDrainOp op) {
  const Coords *at = coordsFor(op.getType());
  if (!at || at != &coordsOf(op.getAcc()))
    return op.emitOpError("accumulator does not come from tile.ring_dot");
  Elems acc = evalAt(op.getAcc(), *at);
  // mma.sync ring_dots (a #tile.mma result) leave no wgmma in flight.
  if (!isa<MmaLayoutAttr>(encodingOf(op.getType())))
    waitAccumulators(acc);
  releaseStage(get(op.getRelease())[0]);
  // The other warpgroups may still be reading the ring: nothing after the
  // loop may reuse shared memory before all are done. (Specialized kernels
  // keep their exchanges apart from the ring; a drain in the loop leaves
  // the ring in use.)
  if (!specialized && !op.getInLoop() && !ringFillsNext(op))
    barrier();
  ringHolds = false;
  dist[op.getResult()] = acc;
  assigned[op.getResult()] = at;
  return success();
}

void Distributor::populateRingPatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerDescFields);
  p.add(&Distributor::lowerRingInit);
  p.add(&Distributor::lowerRingExpect);
  p.add(&Distributor::lowerRingCopy);
  p.add(&Distributor::lowerRingCopyPtrs);
  p.add(&Distributor::lowerRingArrive);
  p.add(&Distributor::lowerRingWait);
  p.add(&Distributor::lowerRingAcquire);
  p.add(&Distributor::lowerRingDot);
  p.add(&Distributor::lowerWgmmaOperand);
  p.add(&Distributor::lowerRingDrain);
  p.add(&Distributor::lowerWarpSpecialize);
  p.add(&Distributor::lowerRingBase);
  p.add(&Distributor::lowerRingAdvance);
  p.add(&Distributor::lowerConsumerGroup);
}
