//===- Distributor.h - State of the convert-tile-to-gpu pass ---*- C++ -*-===//
//
// The state shared by the files of the convert-tile-to-gpu pass: the thread
// layouts of tiles, the per-thread elements of every lowered value and the
// Distributor that walks a kernel. TileToGPU.cpp drives the pass and looks
// each op's pattern up (LoweringPatterns.h; each file below registers its
// family's), TypeConverter.h says what a tile type becomes in a thread;
// Layouts.cpp, Exchange.cpp, Memory.cpp, Atomics.cpp,
// Reduce.cpp, Scan.cpp, Print.cpp and ControlFlow.cpp lower the general ops
// and control flow; DotToMMA.cpp lowers tile.dot to tensor-core
// instructions, SparseDotToMMA.cpp tile.sparse_dot to sparse ones (mma.sp),
// WgmmaRing.cpp the TMA ring and wgmma, RingMmaSync.cpp the ring read by
// mma.sync (targets without wgmma), and TileQueue.cpp the persistent loop's
// tile queue. Internal to the pass.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_CONVERSION_TILETOGPU_DISTRIBUTOR_H
#define SPARSETILE_CONVERSION_TILETOGPU_DISTRIBUTOR_H

#include "Conversion/AxisInfo.h"
#include "Conversion/TileToGPU/ExchangeLayout.h"
#include "Conversion/TileToGPU/LoweringPatterns.h"
#include "Conversion/TileToGPU/TypeConverter.h"
#include "Dialect/Tile/SharedMemory.h"
#include "Dialect/Tile/TileDialect.h"
#include "Dialect/Tile/TileLayouts.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

namespace sparsetile::detail {

using namespace mlir;
using namespace sparsetile::tile;

inline constexpr const char *kSmemSymbol = "__sparsetile_smem";

/// Which thread owns which elements of a tile of `shape`. The flat
/// (row-major) index of the element in slot s = r*vec + k of thread t is
///   flat = r*(threads*vec) + t*vec + k
/// with the three terms in disjoint bit ranges. Threads numbered at or past
/// `threads` replicate thread (t mod threads).
struct Layout {
  SmallVector<int64_t> shape;
  int64_t elems = 1;
  int64_t vec = 1;
  int64_t threads = 1;
  int64_t reps = 1;

  int64_t perThread() const { return vec * reps; }
  int64_t constFlat(int64_t slot) const {
    return (slot / vec) * threads * vec + slot % vec;
  }
  /// Bit position where dimension d's coordinate starts in the flat index.
  int64_t shift(size_t d) const {
    int64_t s = 0;
    for (size_t i = d + 1; i < shape.size(); ++i)
      s += llvm::Log2_64(shape[i]);
    return s;
  }
};

/// Per-slot coordinates: at[slot][dim], i32 SSA values.
struct Coords {
  SmallVector<int64_t> shape;
  std::vector<SmallVector<Value>> at;
  /// Threads t >= ownerThreads hold copies of lower threads' elements (a
  /// reduction's result kept where a replicated canonical source held it);
  /// 0: every thread holds its own elements.
  int64_t ownerThreads = 0;
  /// A blocked layout's run length (#tile.blocked's vec); 0 for others.
  int64_t blockedVec = 0;
};

using Elems = SmallVector<Value>;

/// The vector of `elems` (all one type) built at `ob`'s insertion point:
/// what a vector store of several per-thread elements takes.
inline Value packVector(OpBuilder &ob, Location l, ArrayRef<Value> elems) {
  auto type = VectorType::get({int64_t(elems.size())}, elems.front().getType());
  Value v = ob.create<LLVM::PoisonOp>(l, type);
  for (size_t i = 0; i < elems.size(); ++i)
    v = ob.create<LLVM::InsertElementOp>(
        l, v, elems[i],
        ob.create<arith::ConstantOp>(l, ob.getI32IntegerAttr(int32_t(i))));
  return v;
}

/// The type a thread holds an element of type `t` in (TypeConverter.h):
/// fp8 values live in i8 registers (LLVM has no fp8 type; the conversions
/// take their bits), every other type is its own.
inline Type regType(Type t) { return TileTypeConverter::registerType(t); }

class Distributor {
public:
  Distributor(func::FuncOp src, AxisInfoAnalysis &axis, bool vectorAtomics,
              bool sm90 = true, int64_t sharedLimit = kSharedMemoryPerBlock)
      : src(src), axis(axis), b(src.getContext()), entry(src.getContext()),
        vectorAtomics(vectorAtomics), sm90(sm90), sharedLimit(sharedLimit) {}

  LogicalResult run(gpu::GPUModuleOp module);
  int64_t sharedBytes() const { return smemBytes; }

  // --- Patterns (LoweringPatterns.h): each family registers its ops ------
  static void populateProgramPatterns(LoweringPatterns &p);  ///< TileToGPU.cpp
  static void populateLayoutPatterns(LoweringPatterns &p);   ///< Layouts.cpp
  static void populateMemoryPatterns(LoweringPatterns &p);   ///< Memory.cpp
  static void populateTmaStorePatterns(LoweringPatterns &p); ///< TmaStore.cpp
  static void populateReducePatterns(LoweringPatterns &p);   ///< Reduce.cpp
  static void populateScanPatterns(LoweringPatterns &p);     ///< Scan.cpp
  static void populatePrintPatterns(LoweringPatterns &p);    ///< Print.cpp
  static void populateAtomicPatterns(LoweringPatterns &p);   ///< Atomics.cpp
  static void populateDotPatterns(LoweringPatterns &p);      ///< DotToMMA.cpp
  static void
  populateSparseDotPatterns(LoweringPatterns &p);        ///< SparseDotToMMA.cpp
  static void populateRingPatterns(LoweringPatterns &p); ///< WgmmaRing.cpp
  static void
  populateControlFlowPatterns(LoweringPatterns &p); ///< ControlFlow.cpp
  static void populateTileQueuePatterns(LoweringPatterns &p); ///< TileQueue.cpp

private:
  // --- Layout helpers ----------------------------------------------------
  /// The blocked layout of `shape` with runs of `vec` (0: the kernel's).
  Layout layoutOf(ArrayRef<int64_t> shape, int64_t vec = 0) const;
  Value cst(int64_t v, Type t);
  Value i32(int64_t v) { return cst(v, b.getI32Type()); }
  Value tidTerm(const Layout &l);
  /// The coordinates of the blocked layout of `shape` with runs of `vec`
  /// (0: the kernel's, the canonical layout every tile has by default).
  const Coords &canonical(ArrayRef<int64_t> shape, int64_t vec = 0);
  /// The blocked run length `v` is held in (the kernel's when `v` is held
  /// in another layout: what evaluating it there gives).
  int64_t blockedVecOf(Value v) {
    int64_t vec = coordsOf(v).blockedVec;
    return vec ? vec : vecElems;
  }
  Value flatOf(ArrayRef<Value> coords, ArrayRef<int64_t> shape);
  Location loc() { return src.getLoc(); }

  // --- Layouts in the IR (tile-assign-layouts) -----------------------------
  /// The coordinates the layout of tile type `t` stands for; null when `t`
  /// has none or it does not fit its shape.
  const Coords *coordsFor(Type t);
  /// Whether each tile `op` produced is held where its type's layout says
  /// (an error if not: the two passes disagree).
  LogicalResult checkLayouts(Operation *op);
  LogicalResult lowerConvertLayout(ConvertLayoutOp op);

  // --- Values -----------------------------------------------------------
  Elems &get(Value v);
  const Coords &coordsOf(Value v);
  Elems evalAt(Value v, const Coords &c);
  Elems canonicalElems(Value v) {
    if (!isa<RankedTensorType>(v.getType()))
      return get(v);
    return evalAt(v, canonical(shapeOf(v.getType())));
  }
  // Exchanges through shared memory (Exchange.cpp).
  Elems gather(Value v, const Coords &c);
  ExchangeLayout exchangeLayout(ArrayRef<int64_t> shape, int64_t bytes,
                                const Coords &from, int64_t fromRun,
                                const Coords &to, int64_t toRun);
  Value exchangeAddress(const ExchangeLayout &l, ArrayRef<Value> dims,
                        ArrayRef<int64_t> shape, Type memElt);
  std::optional<Elems> heldAt(Value v, const Coords &c);
  int64_t heldRun(const Coords &c, int64_t maxElems);
  const SmallVector<int32_t> *perThread(Value coord);
  int64_t accessWidth(Value ptr, Value mask, int64_t maxElems, int64_t bytes);
  struct StagePlan {
    Value src;                 // the held tile written to shared memory
    bool transposed = false;   // written at swapped coordinates
    Operation *cast = nullptr; // applied after the read-back
    Type elt;                  // element type in shared memory
  };
  StagePlan planStaging(Value v);
  int64_t stagedStoreWidth(StoreOp op, const StagePlan &plan);
  Elems stageForStore(Value v, const StagePlan &plan);
  bool warpStagedStore(StoreOp op, const StagePlan &plan);
  Value castAfterReadBack(const StagePlan &plan, Value e);
  LogicalResult lowerDescStore(DescStoreOp op);
  bool warpStagedTransposedStore(StoreOp op, const StagePlan &plan);
  Value wgmmaWarpRow(int64_t reps);
  std::pair<Value, Value> warpStagingArea(int64_t reps);
  void storeVectors(StoreOp op, const Elems &vals, const Coords &at,
                    int64_t width, Type elt);
  Value smemPtr(Value flat, Type elt);
  static bool isPureIndexOp(Operation *op);
  static bool isShapeOp(Operation *op);
  bool costlyToRecompute(Value v);
  Elems cloneElementwise(Operation *op, ArrayRef<Elems> operands, size_t n);
  /// Converts `n` elements (`x`, or its one element splatted) from `from` to
  /// `to`, one of them fp8, two at a time with the sm_89 cvt instructions.
  Elems convertFP8(Type from, Type to, const Elems &x, size_t n);
  /// An arith.constant of `attr`, its fp8 value given as the i8 of its bits.
  Value constantOf(TypedAttr attr);
  LLVM::LLVMFuncOp libdeviceFunction(StringRef name, Type type);

  // --- Ops --------------------------------------------------------------
  LogicalResult lowerBlock(Block &block);
  /// Lowers `op` by its kind's pattern, or as pure math (lowerPure).
  LogicalResult lowerOp(Operation *op);
  /// tile.program_id and tile.num_programs.
  LogicalResult lowerGridPosition(Operation *op);
  /// tile.cluster_id and tile.cluster_rank.
  LogicalResult lowerClusterPosition(Operation *op);
  LogicalResult lowerBarrier(BarrierOp op);
  /// Index arithmetic, constants and element-wise math: scalars cloned,
  /// tiles evaluated where their type's layout says (Layouts.cpp).
  LogicalResult lowerPure(Operation *op);
  /// expand_dims, broadcast, reshape and trans (Layouts.cpp).
  LogicalResult lowerShapeOp(Operation *op);
  LogicalResult lowerLoad(LoadOp op);
  LogicalResult lowerStore(StoreOp op);
  LogicalResult lowerReduce(ReduceOp op);
  /// A reduction along `axis` of a tile held at `src` (a tensor-core
  /// accumulator and what is computed from it) done where the elements
  /// are: every output's elements lie in one thread's slots and in the
  /// lanes that differ only in `laneMask`'s bits (butterfly shuffles), so
  /// the result stays in registers, each lane of the group holding it.
  struct HeldReduction {
    Coords out;                   ///< One slot per output of a thread.
    SmallVector<int64_t> groupOf; ///< A source slot's output slot.
    int64_t laneMask = 0;
  };
  /// Null when the layout does not allow it (outputs shared across warps,
  /// replicated elements, coordinates not known per thread).
  const HeldReduction *heldReduction(const Coords &src, int64_t axis);
  /// Where a reduction along `axis` of a blocked tile of `shape` that
  /// reducesInThread() leaves its outputs: at the first slot of each
  /// output's group, in the threads that held the source (replicated where
  /// it was: #tile.slice of a blocked layout).
  const Coords &inThreadSlice(ArrayRef<int64_t> shape, int64_t axis,
                             int64_t vec);
  LayoutParams layoutParams(int64_t vec = 0) const {
    return {numThreads, vec ? vec : vecElems};
  }
  LogicalResult lowerScan(ScanOp op);   ///< Scan.cpp
  LogicalResult lowerPrint(PrintOp op); ///< Print.cpp
  LogicalResult lowerAssert(AssertOp op); ///< Print.cpp
  // Atomics (Atomics.cpp).
  LogicalResult lowerAtomicRMW(AtomicRMWOp op);
  LogicalResult lowerAtomicCAS(AtomicCASOp op);
  LogicalResult lowerAtomic(Operation *op, Value ptr, ValueRange operands,
                            Value mask, StringRef text);
  Value ownerGuard(Value ptr, int64_t vec = 0);
  /// An atomic add whose old values nobody reads: `red`, vectorized.
  LogicalResult lowerReductionAdd(AtomicRMWOp op);
  LogicalResult lowerDot(DotOp op);
  LogicalResult lowerSparseDot(SparseDotOp op); ///< SparseDotToMMA.cpp
  LogicalResult lowerFor(scf::ForOp op);
  // The TMA ring and wgmma (WgmmaRing.cpp).
  LogicalResult lowerDescFields(DescFieldsOp op);
  LogicalResult lowerRingInit(RingInitOp op);
  LogicalResult lowerRingExpect(RingExpectOp op);
  LogicalResult lowerRingCopy(RingCopyOp op);
  LogicalResult lowerRingCopyPtrs(RingCopyPtrsOp op);
  LogicalResult lowerRingArrive(RingArriveOp op);
  LogicalResult lowerRingWait(RingWaitOp op);
  LogicalResult lowerRingAcquire(RingAcquireOp op);
  void waitParity(Value mbarrier, Value phase);
  const Coords *wgmmaLayout(ArrayRef<int64_t> shape);
  LogicalResult lowerRingDot(RingDotOp op);
  /// A ring_dot with mma_sync: ldmatrix + mma.sync (RingMmaSync.cpp).
  LogicalResult lowerRingMmaSync(RingDotOp op);
  LogicalResult lowerWgmmaOperand(WgmmaOperandOp op);
  /// Waits until no wgmma group is in flight, naming the accumulators `acc`
  /// (tied in and out) so that no use of them is scheduled before it.
  void waitAccumulators(Elems &acc);
  LogicalResult lowerRingDrain(RingDrainOp op);
  LogicalResult lowerWarpSpecialize(WarpSpecializeOp op);
  LogicalResult lowerRingBase(RingBaseOp op);
  LogicalResult lowerRingAdvance(RingAdvanceOp op);
  /// A barrier of the threads running this code: the whole block, or after
  /// tile.warp_specialize's split the consumers alone (named barrier 1).
  void barrier();
  /// barrier.cluster arrive + wait over every thread of the cluster.
  void clusterSync();
  /// This program's rank in its cluster (blockIdx.x % C), or with `rank`
  /// false the cluster's index (blockIdx.x / C).
  Value clusterPosition(bool rank);
  void releaseStage(Value release);
  /// For a ring_dot with `enabled`: an scf.if on it whose else runs
  /// `elsePtx` and keeps `acc`, with the builder left in its then-block for
  /// the MMAs (null, and nothing built, without `enabled`). closeSkippable
  /// yields `acc` from the then-block and makes it the if's results.
  scf::IfOp openSkippable(RingDotOp op, const Elems &acc, StringRef elsePtx);
  void closeSkippable(scf::IfOp skip, Elems &acc);
  Value inlinePtx(StringRef text, StringRef constraints, ValueRange args,
                  Type result = {});
  void leaderOnly(llvm::function_ref<void()> body);
  Value ringStage(Value stage, int64_t offset);
  Value ringBarrier(Value stage, bool empty);
  LogicalResult lowerIf(scf::IfOp op);
  LogicalResult lowerWhile(scf::WhileOp op); ///< ControlFlow.cpp
  LogicalResult lowerScalarWhile(scf::WhileOp op);
  /// 16-bit elements carried across scf.for / scf.if as vector<2 x T>.
  Elems packPairs(const Elems &e);
  Elems unpackPairs(ArrayRef<Value> pairs);
  /// How a loop's carried values cross it (ControlFlow.cpp): a tile in the
  /// layout of what the body yields for it, 16-bit elements in pairs; `sizes`
  /// counts each value's flattened operands.
  struct Carried {
    SmallVector<const Coords *> layouts;
    SmallVector<bool> paired;
    SmallVector<size_t> sizes;
  };
  /// The flattened operands of `inits`, choosing `c` from `yielded`.
  Elems carryIn(ValueRange inits, ValueRange yielded, Carried &c);
  /// Maps `from` (a region's arguments or the loop's results) onto the
  /// flattened `to`.
  void bindCarried(ValueRange from, ValueRange to, const Carried &c);
  /// The flattened operands of a terminator carrying `values`.
  Elems carryOut(ValueRange values, const Carried &c);
  // The persistent loop's tile queue (TileQueue.cpp).
  LogicalResult lowerNextTile(NextTileOp op);
  LogicalResult lowerConsumerGroup(ConsumerGroupOp op);
  LogicalResult lowerTurnWait(TurnWaitOp op);
  LogicalResult lowerTurnPass(TurnPassOp op);
  void initTileQueue();
  Value queueAddress(Value slot, int64_t part);
  Value combine(ReduceKind kind, Value a, Value c);
  Value shuffleXor(Value x, int64_t bit);

  // --- Tensor-core (mma.sync) layout -------------------------------------
  struct MmaLayout {
    Coords coords;
    int64_t warpsM = 1, warpsN = 1, repM = 1, repN = 1;
    Value rowBase, colBase; ///< This warp's first row and column.
  };
  /// The mma.sync layout of `shape` with a warpsM x warpsN grid (0: the
  /// grid mmaWarps chooses, tile.dot's).
  FailureOr<MmaLayout *> mmaLayout(ArrayRef<int64_t> shape, int64_t warpsM = 0,
                                   int64_t warpsN = 0);
  FailureOr<MmaLayout *> dotLayout(Operation *op, int64_t m, int64_t n);
  /// ldmatrix of `count` 8 x 8 b16 matrices at the shared-memory pointer
  /// `ptr`, transposed with `trans`: the b32 registers as mma.sync takes
  /// them for element type `elt` (f16 pairs as vector<2xf16>, bf16 as i32).
  SmallVector<Value, 4> loadFragments(Value ptr, int64_t count, bool trans,
                                      Type elt);
  /// acc[slot .. slot + 3] += A * B: one mma.sync.m16n8k16 (A row-major,
  /// four registers; B column-major, two) into f32.
  void mmaSync(Elems &acc, int64_t slot, ArrayRef<Value> a, ArrayRef<Value> b,
               Type elt);
  LogicalResult reserveStaging(Operation *op, int64_t bytes);
  void writeTileToShared(Value x, int64_t base, int64_t ld);

  func::FuncOp src;
  AxisInfoAnalysis &axis;
  /// What each tile type becomes in a thread (set once numThreads is).
  std::optional<TileTypeConverter> converter;
  OpBuilder b;     ///< Where lowered ops go.
  OpBuilder entry; ///< The kernel prologue: values every op may use.
  /// The target has red.global.add.v2/v4.f32 (sm_90).
  bool vectorAtomics = false;
  /// The target is sm_90a: the ring's waits are mbarrier.try_wait, and
  /// what cp.async wrote is fenced for wgmma's async proxy. Elsewhere
  /// (sm_80 .. sm_89) waits spin on test_wait and ldmatrix reads the stages.
  bool sm90 = true;
  /// What a block may use on the target (sharedMemoryPerBlock).
  int64_t sharedLimit = kSharedMemoryPerBlock;
  int64_t numThreads = 128;
  int64_t vecElems = 4;
  /// The thread's place in the tile's threads, and in the block. They
  /// differ in ping-pong kernels only (consumer_groups = 2), where tiles
  /// are spread over one consumer group of numThreads threads, `tid` is
  /// the thread's place in its group, and `consumerGroup` is the group.
  Value tid, blockTid, consumerGroup;
  int64_t consumerGroups = 1;
  /// Ping-pong: the bytes between the groups' exchange areas (patched
  /// once the consumers are lowered).
  arith::ConstantOp groupStride;
  /// Ping-pong: whether this thread's group passed the turn in this step
  /// (an i32 alloca; tile.turn_wait clears it, tile.turn_pass sets it).
  Value turnPassed;
  Value smemBase;
  int64_t smemBytes = 0;
  /// The largest exchange reserved so far, which must stay within the
  /// shared-memory plan's bound (SharedMemory.h's exchangeBound).
  int64_t exchangeMost = 0;
  /// Reserves `bytes` at smemBase for the op being lowered: an exchange
  /// (a layout conversion, a reduction or scan across warps, atomics'
  /// replicas) or mma.sync's operand staging. Unless the ring keeps them
  /// apart (ringBytes), these bytes are the ring's stages, so none may be
  /// used between a fill of the ring and its drain (ringClash).
  void reserveShared(int64_t bytes);
  /// Between a copy into the ring and the ring's drain.
  bool ringHolds = false;
  /// The first op that reserved shared memory while the ring held blocks:
  /// the kernel is refused (its exchange would overwrite landing copies).
  std::optional<Location> ringClash;
  /// The innermost op lowerBlock is lowering (for diagnostics).
  Operation *lowering = nullptr;
  /// The oldest PTX ISA the lowered kernel needs (0: the target's default);
  /// 85 once a sparse dot uses mma.sp::ordered_metadata.
  int64_t minPtx = 0;
  /// Whether the kernel's ring has sparse wgmma (a tile.ring_dot with
  /// metadata): planStaging's cast placement.
  bool sparseWgmma = false;
  /// The TMA ring (kernels with a `tile.ring` attribute): stage count and
  /// size, its 1024-byte-aligned shared address, and `tid == 0`.
  int64_t ringStages = 0, ringStageBytes = 0;
  Value ringBase, leader;
  /// The ring's stages are filled by every thread's cp.async, this many
  /// tile.ring_copy_ptrs a stage (0: by the leader's TMA copies).
  int64_t ringThreadCopies = 0;
  /// Warp-specialized kernels (tile.warp_specialize): the block has a
  /// producer warpgroup after the numThreads threads tiles are spread
  /// over; `inConsumer` while lowering the consumers' region, whose
  /// barriers must leave the producer out. The ring's running count
  /// (tile.ring_base) lives in `ringCount`, an i32 alloca that LLVM keeps
  /// in a register.
  bool specialized = false, inConsumer = false;
  /// The producer warpgroup's threads (tile.warp_specialize's warps x 32).
  int64_t producerThreads = 0;
  /// Lowers the producer's region with tiles spread over its own threads
  /// (a pointer ring's addresses: #tile.blocked over producerThreads), the
  /// thread's place in the producer as `tid`.
  LogicalResult lowerProducerTiles(Block &producer);
  /// Programs per thread block cluster along x (@cluster(C)); 1 for none.
  int64_t clusterSize = 1;
  bool persistent = false; ///< @persistent: the ring refills during epilogues.
  int64_t ringBytes = 0;   ///< Shared memory under the ring (specialized).
  /// The kernel's exchanges have room apart from the ring (#tile.ring's
  /// `apart`): nothing after a ring loop overwrites its stages.
  bool ringApart = false;
  /// A warp-specialized persistent kernel hands out its tiles through a
  /// queue (tile.next_tile): kQueueSlots slots of shared memory after the
  /// ring's mbarriers (smem.queueAt), each with a `full` and an `empty`
  /// mbarrier.
  bool tileQueue = false, inProducer = false;
  static constexpr int64_t kQueueSlots = 4;
  /// Where the kernel's shared memory goes (SharedMemory.h): the ring's
  /// barriers, the queue, the consumer warps' store staging areas
  /// (smem.warpStagingAt, -1 for none; warpStagedStore in StagedStores.cpp)
  /// and the TMA stores' (smem.tmaStoreAt; TmaStore.cpp), as offsets from
  /// ringBase.
  SharedMemoryPlan smem;
  /// Whether a TMA store was issued (the consumers then wait for their
  /// copies before exiting).
  bool tmaStoresIssued = false;
  Value ringCount;
  gpu::GPUModuleOp gpuModule;

  llvm::DenseMap<Value, Elems> dist;
  /// Broadcasts of values held in a tensor-core layout, evaluated at their
  /// users' coordinates instead of lowered where they are (lowerShapeOp).
  llvm::DenseSet<Value> deferred;
  std::map<std::pair<int64_t, const void *>, Value> constants;
  std::map<std::pair<int64_t, int64_t>, Value> tidTerms;
  std::map<std::pair<SmallVector<int64_t>, int64_t>, std::unique_ptr<Coords>>
      canonicalCoords;
  std::deque<Coords> derivedCoords;
  /// Values whose elements are not in the canonical layout (dot results and
  /// what is computed from them), with the coordinates they are held at.
  llvm::DenseMap<Value, const Coords *> assigned;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>,
           std::unique_ptr<MmaLayout>>
      mmaLayouts;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Coords>> wgmmaLayouts;
  std::map<std::pair<const Coords *, int64_t>, std::unique_ptr<HeldReduction>>
      heldReductions;
  std::map<std::tuple<SmallVector<int64_t>, int64_t, int64_t>,
           std::unique_ptr<Coords>>
      inThreadSlices;
  Value laneLo8, laneHalf, laneQuad; ///< lane % 8, (lane / 8) % 2, lane / 16.
  std::map<std::pair<const void *, const Coords *>, Elems> memo;
  /// costlyToRecompute's answers, and its limit: a pure chain of more
  /// operations than this moves through shared memory rather than being
  /// evaluated again at other coordinates.
  llvm::DenseMap<Value, bool> costly;
  static constexpr int64_t kRecomputeLimit = 64;
  /// perThread's results: a coordinate's value in each of the numThreads
  /// threads (null: not a function of the thread id alone).
  llvm::DenseMap<Value, std::unique_ptr<SmallVector<int32_t>>> threadValues;
};

} // namespace sparsetile::detail

#endif // SPARSETILE_CONVERSION_TILETOGPU_DISTRIBUTOR_H
