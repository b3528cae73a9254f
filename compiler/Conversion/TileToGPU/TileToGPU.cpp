//===- TileToGPU.cpp - Distribute tiles over the threads of a block -------===//
//
// The driver of the convert-tile-to-gpu pass (see Passes.td for the layout
// it chooses): the pass itself, the gpu.func and its prologue, shared memory
// sizing, and the table of lowering patterns. Every tile value maps to the
// list of scalars the current thread owns where its type's layout says
// (TypeConverter.h: how many, and how loops carry them), and each op is
// lowered once, in order, into a new gpu.func by the pattern its family
// registered (LoweringPatterns.h). The walk is the pass's own rather than
// MLIR's dialect conversion because pure index math is evaluated at the
// coordinates its users need, from the unconverted IR (below).
//
// The lowerings live by concern, around the shared state in Distributor.h:
//   Layouts.cpp         layouts, per-thread values, element-wise ops
//   Memory.cpp          tile.load, tile.store
//   Reduce.cpp          tile.reduce
//   Atomics.cpp         tile.atomic_rmw, tile.atomic_cas
//   Scan.cpp            tile.scan (cumsum)
//   Print.cpp           tile.print (device_print)
//   ControlFlow.cpp     scf.for / scf.if, rebuilt with the flattened
//                       per-thread values as iter_args/results; scf.while
//                       over scalars (the persistent loop)
//   DotToMMA.cpp        tile.dot (mma.sync)
//   SparseDotToMMA.cpp  tile.sparse_dot (mma.sp)
//   WgmmaRing.cpp       the TMA ring, wgmma, warp specialization, barriers
//   RingMmaSync.cpp     the ring read by ldmatrix + mma.sync (sm_80 .. sm_89)
//   TileQueue.cpp       tile.next_tile: the persistent loop's tile queue
//
// Values that are pure functions of indices (arange, splat, constants and
// arithmetic on them) can be evaluated at any coordinates, so a shape change
// recomputes them instead of moving data. Other values (loads, reductions,
// loop-carried values) change layout through shared memory.
//
//===----------------------------------------------------------------------===//

#include "Conversion/Passes.h"
#include "Conversion/TileToGPU/Distributor.h"
#include "Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"

#include <deque>
#include <map>

namespace sparsetile {
#define GEN_PASS_DEF_TILETOGPU
#include "Conversion/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

using namespace sparsetile::detail;

/// The compile budget (Language.md): a kernel's tile ops may come to at most
/// this many per-thread operations, 8x the largest example kernel's
/// (mask24_update, 7617). The worst shapes tried at the limit take 7-14 s
/// and under 800 MB on a 2-core machine, nearly all of it in LLVM.
static constexpr int64_t kMaxThreadOps = int64_t(1) << 16;

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult Distributor::lowerBlock(Block &block) {
  for (Operation &op : block.without_terminator()) {
    lowering = &op;
    if (failed(lowerOp(&op)) || failed(checkLayouts(&op)))
      return failure();
  }
  return success();
}

void Distributor::reserveShared(int64_t bytes) {
  smemBytes = std::max(smemBytes, bytes);
  exchangeMost = std::max(exchangeMost, bytes);
  if (ringHolds && !ringBytes && !ringClash)
    ringClash = lowering ? lowering->getLoc() : loc();
}

/// Every op kind's pattern, registered by the file of its family.
static const LoweringPatterns &patterns() {
  static const LoweringPatterns all = [] {
    LoweringPatterns p;
    Distributor::populateProgramPatterns(p);     // this file
    Distributor::populateLayoutPatterns(p);      // Layouts.cpp
    Distributor::populateMemoryPatterns(p);      // Memory.cpp
    Distributor::populateTmaStorePatterns(p);    // TmaStore.cpp
    Distributor::populateReducePatterns(p);      // Reduce.cpp
    Distributor::populateScanPatterns(p);        // Scan.cpp
    Distributor::populatePrintPatterns(p);       // Print.cpp
    Distributor::populateAtomicPatterns(p);      // Atomics.cpp
    Distributor::populateDotPatterns(p);         // DotToMMA.cpp
    Distributor::populateSparseDotPatterns(p);   // SparseDotToMMA.cpp
    Distributor::populateRingPatterns(p);        // WgmmaRing.cpp
    Distributor::populateControlFlowPatterns(p); // ControlFlow.cpp
    Distributor::populateTileQueuePatterns(p);   // TileQueue.cpp
    return p;
  }();
  return all;
}

LogicalResult Distributor::lowerOp(Operation *op) {
  if (const LoweringPatterns::Lowering *lower = patterns().lookup(op))
    return (*lower)(*this, op);
  // Index arithmetic, constants and element-wise math (Layouts.cpp).
  if (isPureIndexOp(op) || isa<arith::ConstantOp>(op))
    return lowerPure(op);
  return op->emitOpError("cannot be distributed over threads");
}

//===----------------------------------------------------------------------===//
// Program ids and barriers
//===----------------------------------------------------------------------===//

/// tile.program_id (the block's index) and tile.num_programs (the grid's
/// size) along an axis, as i32.
LogicalResult Distributor::lowerGridPosition(Operation *op) {
  Location l = op->getLoc();
  Value v;
  if (auto p = dyn_cast<ProgramIdOp>(op))
    v = b.create<gpu::BlockIdOp>(l, gpu::Dimension(p.getAxis()));
  else
    v = b.create<gpu::GridDimOp>(
        l, gpu::Dimension(cast<NumProgramsOp>(op).getAxis()));
  dist[op->getResult(0)] = {b.create<arith::IndexCastOp>(l, b.getI32Type(), v)};
  return success();
}

LogicalResult Distributor::lowerClusterPosition(Operation *op) {
  dist[op->getResult(0)] = {clusterPosition(isa<ClusterRankOp>(op))};
  return success();
}

LogicalResult Distributor::lowerBarrier(BarrierOp op) {
  // The producer and consumers of a warp-specialized kernel do not meet
  // at block-wide barriers: a user barrier would hang one side.
  if (specialized)
    return op.emitOpError("barrier() is not supported in a "
                          "warp-specialized kernel");
  barrier();
  return success();
}

void Distributor::populateProgramPatterns(LoweringPatterns &p) {
  p.addEach<ProgramIdOp, NumProgramsOp>(&Distributor::lowerGridPosition);
  p.addEach<ClusterIdOp, ClusterRankOp>(&Distributor::lowerClusterPosition);
  p.add(&Distributor::lowerBarrier);
}

LogicalResult Distributor::run(gpu::GPUModuleOp module) {
  MLIRContext *ctx = src.getContext();
  gpuModule = module;
  // The thread count and run length every layout follows from
  // (TileLayouts.h, shared with tile-assign-layouts).
  FailureOr<LayoutParams> params = kernelLayoutParams(src);
  if (failed(params))
    return failure();
  numThreads = params->numThreads;
  vecElems = params->vecElems;
  converter.emplace(ctx, numThreads);
  if (auto pa = src->getAttrOfType<IntegerAttr>(kPersistentAttr))
    persistent = pa.getInt() != 0;
  if (auto ca = src->getAttrOfType<IntegerAttr>(kClusterAttr))
    clusterSize = ca.getInt();

  // Every element a thread owns becomes straight-line code: a huge tile
  // would compile for minutes and spill. Refuse it with the op's location.
  // The compile budget bounds the sum over the kernel the same way (each op
  // costs at least one), before any of it is built: LLVM's time and memory
  // grow faster than linearly in it (3 ops on 64 elements a thread, 1000
  // lines of them, took 38 s and 1.7 GB in LLVM; 4000 lines 133 s, 8 GB).
  constexpr int64_t kMaxPerThread = 1024;
  int64_t budget = 0;
  WalkResult tooBig = src.walk([&](Operation *op) {
    int64_t cost = 1;
    for (Type t : op->getResultTypes()) {
      auto shape = shapeOf(t);
      if (shape.empty())
        continue;
      int64_t elems = 1;
      for (int64_t d : shape)
        elems *= d;
      cost = std::max(cost, elems / numThreads);
      if (elems / numThreads > kMaxPerThread) {
        op->emitError() << "a tile of " << elems << " elements over "
                        << numThreads << " threads is " << elems / numThreads
                        << " elements per thread; the limit is "
                        << kMaxPerThread
                        << " (use a smaller tile or more warps)";
        return WalkResult::interrupt();
      }
    }
    budget += cost;
    if (budget > kMaxThreadOps) {
      op->emitError() << "this kernel is past the compile budget: its "
                         "operations come to more than "
                      << kMaxThreadOps
                      << " per thread (a tile op counts its elements per "
                         "thread), the limit reached here";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (tooBig.wasInterrupted())
    return failure();

  // A warp-specialized kernel has a producer warpgroup besides the
  // numThreads threads its tiles are spread over.
  int64_t blocksPerSM = 1;
  src.walk([&](WarpSpecializeOp ws) {
    specialized = true;
    blocksPerSM = ws.getBlocksPerSm();
    producerThreads = 32 * ws.getProducerWarps();
    consumerGroups = ws.getConsumerGroups();
  });
  int64_t blockThreads = numThreads * consumerGroups + producerThreads;
  src.walk([&](NextTileOp) { tileQueue = specialized; });

  // The gpu.func, with pointers in the global address space.
  SmallVector<Type> argTypes;
  if (failed(converter->convertTypes(src.getArgumentTypes(), argTypes)) ||
      argTypes.size() != src.getNumArguments())
    return src.emitError("a kernel argument has no type in a thread");
  b.setInsertionPointToEnd(module.getBody());
  auto gfunc = b.create<gpu::GPUFuncOp>(src.getLoc(), src.getName(),
                                        b.getFunctionType(argTypes, {}));
  gfunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  gfunc.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(blockThreads), 1, 1}));
  gfunc->setAttr("nvvm.maxntid",
                 b.getDenseI32ArrayAttr({int32_t(blockThreads), 1, 1}));
  // setmaxnreg only takes effect under a register cap at entry, which
  // .maxntid with .minnctapersm B gives (64 K registers / (B x block)).
  if (specialized)
    gfunc->setAttr("nvvm.minctasm", b.getI32IntegerAttr(int32_t(blocksPerSM)));
  // `@maxnreg(N)`: .maxnreg N caps every thread's registers. A
  // warp-specialized kernel moves registers between its warpgroups with
  // setmaxnreg under the cap .minnctapersm sets, which a second cap would
  // contradict.
  if (auto cap = src->getAttrOfType<IntegerAttr>(kMaxnregAttr);
      cap && cap.getInt() > 0) {
    if (specialized)
      return src.emitError("@maxnreg does not apply to a warp-specialized "
                           "kernel, whose warpgroups set their own "
                           "registers (setmaxnreg)");
    gfunc->setAttr("nvvm.maxnreg", b.getI32IntegerAttr(int32_t(cap.getInt())));
  }
  // .reqnctapercluster: the launch gets clusters of C blocks along x.
  if (clusterSize > 1)
    gfunc->setAttr("nvvm.cluster_dim",
                   b.getDenseI32ArrayAttr({int32_t(clusterSize), 1, 1}));
  Block &body = gfunc.getBody().front();
  for (unsigned i = 0; i < src.getNumArguments(); ++i)
    dist[src.getArgument(i)] = {body.getArgument(i)};

  // The prologue: thread id and shared memory base; a marker separates it
  // from the body so `entry` keeps inserting before the first body op.
  b.setInsertionPointToStart(&body);
  Value tidIndex = b.create<gpu::ThreadIdOp>(src.getLoc(), gpu::Dimension::x);
  tid = blockTid =
      b.create<arith::IndexCastOp>(src.getLoc(), b.getI32Type(), tidIndex);
  if (consumerGroups > 1) {
    // Ping-pong: tile layouts spread over one consumer group, so `tid` is
    // the thread's place in its group (numThreads is a power of two).
    Location l = src.getLoc();
    tid = b.create<arith::AndIOp>(
        l, blockTid,
        b.create<arith::ConstantOp>(
            l, b.getI32IntegerAttr(int32_t(numThreads - 1))));
    consumerGroup = b.create<arith::ShRUIOp>(
        l, blockTid,
        b.create<arith::ConstantOp>(
            l, b.getI32IntegerAttr(int32_t(llvm::Log2_64(numThreads)))));
  }
  smemBase = b.create<LLVM::AddressOfOp>(
      src.getLoc(), LLVM::LLVMPointerType::get(ctx, 3), kSmemSymbol);
  if (auto ring = src->getAttrOfType<RingAttr>(kRingAttr)) {
    ringStages = ring.getStages();
    ringStageBytes = ring.getStageBytes();
    ringThreadCopies = ring.getThreadCopies();
    sparseWgmma = src.walk([](RingDotOp d) {
                       return d.getMetaOffset() ? WalkResult::interrupt()
                                                : WalkResult::advance();
                     })
                      .wasInterrupted();
    Location l = src.getLoc();
    auto c = [&](int64_t v) -> Value {
      return b.create<arith::ConstantOp>(l, b.getI32IntegerAttr(int32_t(v)));
    };
    Value addr = b.create<arith::TruncIOp>(
        l, b.getI32Type(),
        b.create<LLVM::PtrToIntOp>(l, b.getI64Type(), smemBase));
    ringBase = b.create<arith::AndIOp>(
        l, b.create<arith::AddIOp>(l, addr, c(1023)), c(~int64_t(1023)));
    leader =
        b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, blockTid, c(0));
    // The ring, its barriers, queue and staging areas (SharedMemory.h).
    // The exchanges follow them in a warp-specialized kernel (the producer
    // refills the ring while the consumers run an epilogue) and in a ring
    // `apart` (attention's softmax exchanges while the ring holds later
    // blocks); otherwise they reuse the ring's bytes.
    smem =
        planSharedMemory(src, {specialized, persistent, tileQueue,
                               numThreads / 32, consumerGroups, blocksPerSM});
    ringApart = !specialized && ring.getApart();
    ringBytes = smem.exchangesAt;
    smemBytes = ringBytes ? 0 : smem.ringPartBytes;
    if (ringBytes)
      smemBase =
          b.create<LLVM::GEPOp>(l, smemBase.getType(), b.getI8Type(), smemBase,
                                ArrayRef<LLVM::GEPArg>{int32_t(ringBytes)});
    if (specialized) {
      if (consumerGroups > 1) {
        // Each consumer group exchanges through an area of its own: the
        // groups run different tiles. Its size is known once the
        // consumers are lowered (the stride is patched below).
        groupStride = b.create<arith::ConstantOp>(l, b.getI32IntegerAttr(0));
        smemBase = b.create<LLVM::GEPOp>(
            l, smemBase.getType(), b.getI8Type(), smemBase,
            ValueRange{b.create<arith::MulIOp>(l, consumerGroup,
                                               groupStride.getResult())});
      }
      if (consumerGroups > 1 && tileQueue) {
        turnPassed = b.create<LLVM::AllocaOp>(
            l, LLVM::LLVMPointerType::get(ctx), b.getI32Type(), c(1));
        b.create<LLVM::StoreOp>(l, c(0), turnPassed);
      }
    }
    // The ring's running count (tile.ring_base / ring_advance): an i32
    // alloca that LLVM keeps in a register.
    ringCount = b.create<LLVM::AllocaOp>(l, LLVM::LLVMPointerType::get(ctx),
                                         b.getI32Type(), c(1));
    b.create<LLVM::StoreOp>(l, c(0), ringCount);
  }
  Operation *marker =
      b.create<arith::ConstantOp>(src.getLoc(), b.getI32IntegerAttr(0));
  entry.setInsertionPoint(marker);
  b.setInsertionPointToEnd(&body);

  // What the pipeline passes planned the ring's room by; an exchange past
  // it would overlap what they placed after it.
  int64_t planned = exchangeBound(src);
  if (failed(lowerBlock(src.getBody().front())))
    return failure();
  if (exchangeMost > planned)
    return src.emitError("internal error: an exchange of ")
           << exchangeMost << " bytes exceeds the plan's bound of " << planned
           << " bytes (SharedMemory.h, exchangeBound)";
  if (ringClash)
    return emitError(*ringClash)
           << "moves data through shared memory while the ring's copies may "
              "still land there (a layout conversion or a reduction across "
              "warps between the ring's first fill and its drain); convert "
              "the value before the loop";
  b.create<gpu::ReturnOp>(src.getLoc());
  marker->erase();
  if (groupStride)
    groupStride.setValueAttr(
        b.getI32IntegerAttr(int32_t((smemBytes + 15) / 16 * 16)));
  smemBytes = smem.total(smemBytes, groupStride ? consumerGroups : 1);
  if (smemBytes > sharedLimit)
    return src.emitError("the kernel needs ")
           << smemBytes << " bytes of shared memory (the ring and "
           << smemBytes - ringBytes << " bytes of exchanges); a block may use "
           << sharedLimit << " on this target (use fewer stages or smaller "
           << "tiles)";

  // Shared memory, sized by the largest exchange (or the TMA ring). Static
  // up to the 48 KB limit of static shared memory, dynamic beyond (the
  // runtime passes the size at launch and opts the kernel in).
  OpBuilder mb(ctx);
  mb.setInsertionPointToStart(module.getBody());
  bool dynamic = smemBytes > kStaticSharedMemoryLimit;
  auto arrayTy = LLVM::LLVMArrayType::get(
      mb.getI8Type(), dynamic ? 0 : std::max<int64_t>(smemBytes, 16));
  mb.create<LLVM::GlobalOp>(
      src.getLoc(), arrayTy, /*isConstant=*/false,
      dynamic ? LLVM::Linkage::External : LLVM::Linkage::Internal, kSmemSymbol,
      Attribute(), /*alignment=*/16, /*addrSpace=*/3);
  gfunc->setAttr(kLaunchAttr,
                 LaunchAttr::get(ctx, blockThreads, dynamic ? 0 : smemBytes,
                                 dynamic ? smemBytes : 0, minPtx));
  return success();
}

namespace {
struct TileToGPUPass : public sparsetile::impl::TileToGPUBase<TileToGPUPass> {
  using TileToGPUBase::TileToGPUBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr(kKernelAttr))
        kernels.push_back(f);
    OpBuilder b(module.getContext());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    for (func::FuncOp f : kernels) {
      b.setInsertionPointToEnd(module.getBody());
      auto gm = b.create<gpu::GPUModuleOp>(f.getLoc(),
                                           (f.getName() + "_module").str());
      // Each tile is lowered where its type's layout says.
      if (failed(assignLayouts(f)) || failed(checkSharedLayouts(f)))
        return signalPassFailure();
      AxisInfoAnalysis axis(f);
      Distributor d(f, axis, vectorAtomics, sm90,
                    sharedPerBlock > 0 ? int64_t(sharedPerBlock)
                                       : kSharedMemoryPerBlock);
      if (failed(d.run(gm)))
        return signalPassFailure();
      f.erase();
    }
  }
};
} // namespace
