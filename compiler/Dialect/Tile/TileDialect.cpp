//===- TileDialect.cpp - The tile dialect's verifiers ---------------------===//
//
// Implements the tile dialect: registration, and one verifier per op. The
// verifiers are what make hand-written tile IR (tests, tile-opt) safe to feed
// to the distribution pass, which assumes power-of-two static shapes.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace sparsetile::tile;

#include "Dialect/Tile/TileAttrs.cpp.inc"
#include "Dialect/Tile/TileDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "Dialect/Tile/TileTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Dialect/Tile/TileAttrDefs.cpp.inc"

#define GET_OP_CLASSES
#include "Dialect/Tile/TileOps.cpp.inc"

namespace {
/// Layouts print as aliases (`#blocked`, `#mma1`, ...) declared once at the
/// top of the module, as Triton's do: a tile type stays one line.
struct TileOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    StringRef name = llvm::TypeSwitch<Attribute, StringRef>(attr)
                         .Case([](BlockedLayoutAttr) { return "blocked"; })
                         .Case([](MmaLayoutAttr) { return "mma"; })
                         .Case([](WgmmaLayoutAttr) { return "wgmma"; })
                         .Case([](SliceLayoutAttr) { return "slice"; })
                         .Default([](Attribute) { return ""; });
    if (name.empty())
      return AliasResult::NoAlias;
    os << name;
    return AliasResult::OverridableAlias;
  }
};
} // namespace

void TileDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "Dialect/Tile/TileTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "Dialect/Tile/TileOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Dialect/Tile/TileAttrDefs.cpp.inc"
      >();
  addInterfaces<TileOpAsmInterface>();
}

LogicalResult
RingAttr::verify(llvm::function_ref<InFlightDiagnostic()> emitError,
                 int64_t stages, int64_t stageBytes, int64_t threadCopies,
                 bool) {
  if (threadCopies < 0)
    return emitError() << "thread_copies must be 0 (TMA) or the number of "
                          "copy ops a stage, got " << threadCopies;
  if (stages < 2)
    return emitError() << "a ring needs at least 2 stages, got " << stages;
  if (stageBytes <= 0 || stageBytes % 1024)
    return emitError() << "ring stages must be whole 1024-byte blocks (the "
                          "128-byte swizzle's period), got "
                       << stageBytes << " bytes";
  return success();
}

LogicalResult
SharedLayoutAttr::verify(llvm::function_ref<InFlightDiagnostic()> emitError,
                         int64_t swizzle) {
  if (swizzle != 0 && swizzle != 64 && swizzle != 128)
    return emitError() << "a shared layout's swizzle is 0 (plain rows), 64 "
                          "or 128 bytes, got "
                       << swizzle;
  return success();
}

LogicalResult TileDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  auto expect = [&](bool ok, StringRef what) -> LogicalResult {
    if (ok)
      return success();
    return op->emitError() << "'" << name << "' must be " << what << ", got "
                           << attr.getValue();
  };
  if (name == kRingAttr)
    return expect(isa<RingAttr>(attr.getValue()), "a #tile.ring");
  if (name == kLaunchAttr)
    return expect(isa<LaunchAttr>(attr.getValue()), "a #tile.launch");
  if (name == kNumWarpsAttr || name == kPersistentAttr ||
      name == kWarpSpecializeAttr || name == kClusterAttr ||
      name == kPingPongAttr || name == kMaxnregAttr || name == kThreadRunAttr)
    return expect(isa<IntegerAttr>(attr.getValue()), "an integer");
  return success();
}

namespace sparsetile::tile {

Type elementType(Type type) {
  if (auto t = dyn_cast<RankedTensorType>(type))
    return t.getElementType();
  return type;
}

int64_t tmaStoreStagingBytes(Operation *kernel) {
  int64_t bytes = 0;
  kernel->walk([&](DescStoreOp op) {
    if (!op.getTma())
      return;
    auto t = cast<RankedTensorType>(op.getValue().getType());
    int64_t b = t.getNumElements() * t.getElementTypeBitWidth() / 8;
    bytes = std::max(bytes, (b + 1023) / 1024 * 1024);
  });
  return bytes;
}

ArrayRef<int64_t> shapeOf(Type type) {
  if (auto t = dyn_cast<RankedTensorType>(type))
    return t.getShape();
  return {};
}

} // namespace sparsetile::tile

/// Tiles are distributed over threads with bit arithmetic, so every
/// dimension must be a static power of two.
static LogicalResult verifyTileShape(Operation *op, Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return success();
  for (int64_t d : t.getShape())
    if (ShapedType::isDynamic(d) || d <= 0 || !llvm::isPowerOf2_64(d))
      return op->emitOpError("tile dimensions must be static powers of two, got ")
             << type;
  return success();
}

static LogicalResult verifyAxis(Operation *op, int32_t axis) {
  if (axis < 0 || axis > 2)
    return op->emitOpError("axis must be 0, 1 or 2, got ") << axis;
  return success();
}

LogicalResult ProgramIdOp::verify() { return verifyAxis(*this, getAxis()); }
LogicalResult NumProgramsOp::verify() { return verifyAxis(*this, getAxis()); }

LogicalResult ArangeOp::verify() {
  auto type = getResult().getType();
  if (type.getRank() != 1)
    return emitOpError("result must be 1-D");
  // I32Attr's accessors return uint32_t: read them back as signed, or a
  // negative start reads as 2^32 - |start|.
  int64_t n = int64_t(int32_t(getEnd())) - int64_t(int32_t(getStart()));
  if (n != type.getDimSize(0))
    return emitOpError("range length ") << n << " does not match result " << type;
  return verifyTileShape(*this, type);
}

LogicalResult SplatOp::verify() {
  if (isa<RankedTensorType>(getSrc().getType()))
    return emitOpError("source must be a scalar");
  if (getSrc().getType() != getResult().getType().getElementType())
    return emitOpError("element type mismatch");
  return verifyTileShape(*this, getResult().getType());
}

LogicalResult ExpandDimsOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  auto dst = cast<RankedTensorType>(getResult().getType());
  int32_t axis = getAxis();
  if (axis < 0 || axis > src.getRank())
    return emitOpError("axis ") << axis << " out of range";
  SmallVector<int64_t> expect(src.getShape());
  expect.insert(expect.begin() + axis, 1);
  if (dst.getShape() != ArrayRef<int64_t>(expect) ||
      dst.getElementType() != src.getElementType())
    return emitOpError("result type must be the source with a 1 at axis ")
           << axis;
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  auto dst = cast<RankedTensorType>(getResult().getType());
  if (src.getRank() != dst.getRank() ||
      src.getElementType() != dst.getElementType())
    return emitOpError("source and result need the same rank and element type");
  for (auto [s, d] : llvm::zip(src.getShape(), dst.getShape()))
    if (s != d && s != 1)
      return emitOpError("cannot broadcast ") << src << " to " << dst;
  return verifyTileShape(*this, dst);
}

LogicalResult AddPtrOp::verify() {
  if (shapeOf(getPtr().getType()) != shapeOf(getOffset().getType()))
    return emitOpError("pointer and offset shapes differ");
  return verifyTileShape(*this, getPtr().getType());
}

LogicalResult LoadOp::verify() {
  auto ptrType = cast<PointerType>(elementType(getPtr().getType()));
  auto shape = shapeOf(getPtr().getType());
  if (elementType(getResult().getType()) != ptrType.getPointee() ||
      shapeOf(getResult().getType()) != shape)
    return emitOpError("result must have the pointer's shape and pointee type");
  if (getMask() && shapeOf(getMask().getType()) != shape)
    return emitOpError("mask shape differs from pointer shape");
  if (getOther() && getOther().getType() != getResult().getType())
    return emitOpError("'other' must have the result type");
  return verifyTileShape(*this, getPtr().getType());
}

LogicalResult StoreOp::verify() {
  auto ptrType = cast<PointerType>(elementType(getPtr().getType()));
  auto shape = shapeOf(getPtr().getType());
  if (elementType(getValue().getType()) != ptrType.getPointee() ||
      shapeOf(getValue().getType()) != shape)
    return emitOpError("value must have the pointer's shape and pointee type");
  if (getMask() && shapeOf(getMask().getType()) != shape)
    return emitOpError("mask shape differs from pointer shape");
  return verifyTileShape(*this, getPtr().getType());
}

/// The operand rules every atomic shares: `values` and the result have the
/// pointers' shape and pointee type, the mask their shape.
static LogicalResult verifyAtomicOperands(Operation *op, Value ptr,
                                          ValueRange values, Value mask,
                                          Type result) {
  auto ptrType = cast<PointerType>(elementType(ptr.getType()));
  auto shape = shapeOf(ptr.getType());
  for (Value v : values)
    if (elementType(v.getType()) != ptrType.getPointee() ||
        shapeOf(v.getType()) != shape || isa<RankedTensorType>(v.getType()) !=
                                             isa<RankedTensorType>(ptr.getType()))
      return op->emitOpError(
          "operands must have the pointers' shape and pointee type");
  if (elementType(result) != ptrType.getPointee() || shapeOf(result) != shape ||
      isa<RankedTensorType>(result) != isa<RankedTensorType>(ptr.getType()))
    return op->emitOpError(
        "result must have the pointers' shape and pointee type");
  if (mask && shapeOf(mask.getType()) != shape)
    return op->emitOpError("mask shape differs from pointer shape");
  return verifyTileShape(op, ptr.getType());
}

LogicalResult AtomicRMWOp::verify() {
  if (failed(verifyAtomicOperands(*this, getPtr(), getValue(), getMask(),
                                  getResult().getType())))
    return failure();
  Type elt = elementType(getValue().getType());
  unsigned bits = elt.isIntOrFloat() ? elt.getIntOrFloatBitWidth() : 0;
  bool ok = false;
  switch (getKind()) {
  case AtomicKind::Add:
    ok = elt.isInteger(32) || elt.isInteger(64) || elt.isF32() || elt.isF16() ||
         elt.isBF16();
    break;
  case AtomicKind::Max:
  case AtomicKind::Min:
    ok = elt.isInteger(32) || elt.isInteger(64) || elt.isF32();
    break;
  case AtomicKind::UMax:
  case AtomicKind::UMin:
    ok = elt.isInteger(32) || elt.isInteger(64);
    break;
  case AtomicKind::Xchg:
    ok = bits == 32 || bits == 64;
    break;
  }
  if (!ok)
    return emitOpError("atomic ") << stringifyAtomicKind(getKind())
                                  << " does not support " << elt;
  return success();
}

LogicalResult AtomicCASOp::verify() {
  if (failed(verifyAtomicOperands(*this, getPtr(), {getCmp(), getValue()},
                                  getMask(), getResult().getType())))
    return failure();
  Type elt = elementType(getValue().getType());
  unsigned bits = elt.isIntOrFloat() ? elt.getIntOrFloatBitWidth() : 0;
  if (bits != 32 && bits != 64)
    return emitOpError("compare-and-swap needs a 32- or 64-bit type, got ")
           << elt;
  return success();
}

/// What reductions and scans share: an axis of the source, an f32, i32 or
/// i64 element type, and bitwise kinds on integers only. `what` names the
/// op's action in messages ("reduces", "scans").
static LogicalResult verifyAlongAxis(Operation *op, RankedTensorType src,
                                     int32_t axis, ReduceKind kind,
                                     StringRef what) {
  if (axis < 0 || axis >= src.getRank())
    return op->emitOpError("axis ") << axis << " out of range for " << src;
  Type elt = src.getElementType();
  if (!elt.isF32() && !elt.isInteger(32) && !elt.isInteger(64))
    return op->emitOpError(what) << " f32, i32 or i64 tiles, got " << elt;
  bool bitwise = kind == ReduceKind::Or || kind == ReduceKind::And ||
                 kind == ReduceKind::Xor;
  if (bitwise && elt.isF32())
    return op->emitOpError("bitwise kinds take integer tiles, got ") << elt;
  return success();
}

LogicalResult ReduceOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  int32_t axis = getAxis();
  if (failed(verifyAlongAxis(*this, src, axis, getKind(), "reduces")))
    return failure();
  Type elt = src.getElementType();
  Type resultElt = getKind() == ReduceKind::Argmax
                       ? Type(IntegerType::get(getContext(), 32))
                       : elt;
  SmallVector<int64_t> shape(src.getShape());
  shape.erase(shape.begin() + axis);
  Type expect = shape.empty() ? resultElt
                              : Type(RankedTensorType::get(shape, resultElt));
  // The result's layout (its encoding) is tile-assign-layouts' choice.
  auto resultTile = dyn_cast<RankedTensorType>(getResult().getType());
  if (resultTile ? !isa<RankedTensorType>(expect) ||
                       resultTile.getShape() != shapeOf(expect) ||
                       resultTile.getElementType() != resultElt
                 : getResult().getType() != expect)
    return emitOpError("result type must be ") << expect;
  return verifyTileShape(*this, src);
}

LogicalResult ScanOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  if (failed(verifyAlongAxis(*this, src, getAxis(), getKind(), "scans")))
    return failure();
  if (getKind() == ReduceKind::Argmax)
    return emitOpError("argmax is not a scan");
  if (getResult().getType() != src)
    return emitOpError("result type must be ") << src;
  return verifyTileShape(*this, src);
}

LogicalResult PrintOp::verify() {
  for (Value v : getValues()) {
    Type elt = elementType(v.getType());
    if (!elt.isIntOrFloat() || elt.getIntOrFloatBitWidth() > 64)
      return emitOpError("prints integers and floats, got ") << v.getType();
    if (failed(verifyTileShape(*this, v.getType())))
      return failure();
  }
  if (getPrefix().contains('%'))
    return emitOpError("the prefix is not a format string: no '%'");
  return success();
}

LogicalResult AssertOp::verify() {
  if (!elementType(getCondition().getType()).isInteger(1))
    return emitOpError("the condition must be bool, got ")
           << getCondition().getType();
  return verifyTileShape(*this, getCondition().getType());
}

LogicalResult ReshapeOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  auto dst = cast<RankedTensorType>(getResult().getType());
  if (src.getElementType() != dst.getElementType() ||
      src.getNumElements() != dst.getNumElements())
    return emitOpError("reshapes to the same element type and count, got ")
           << src << " -> " << dst;
  if (failed(verifyTileShape(*this, src)))
    return failure();
  return verifyTileShape(*this, dst);
}

LogicalResult TransOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  auto dst = cast<RankedTensorType>(getResult().getType());
  if (src.getRank() != 2 || dst.getRank() != 2 ||
      src.getElementType() != dst.getElementType() ||
      src.getDimSize(0) != dst.getDimSize(1) ||
      src.getDimSize(1) != dst.getDimSize(0))
    return emitOpError("result must be the 2-D source transposed");
  return verifyTileShape(*this, dst);
}

LogicalResult AssumeOp::verify() {
  for (auto [name, attr] : {std::pair{"divisibility", getDivisibilityAttr()},
                            std::pair{"contiguity", getContiguityAttr()}})
    if (attr && (attr.getInt() <= 0 || !llvm::isPowerOf2_64(attr.getInt())))
      return emitOpError(name) << " must be a positive power of two, got "
                               << attr.getInt();
  if (getContiguityAttr() && !isa<RankedTensorType>(getSrc().getType()))
    return emitOpError("contiguity needs a tile");
  return success();
}

LogicalResult DotOp::verify() {
  auto a = cast<RankedTensorType>(getA().getType());
  auto b = cast<RankedTensorType>(getB().getType());
  auto acc = cast<RankedTensorType>(getAcc().getType());
  if (a.getRank() != 2 || b.getRank() != 2 || acc.getRank() != 2)
    return emitOpError("operands must be 2-D tiles");
  Type e = a.getElementType();
  auto isFP8 = [](Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); };
  if (!(isFP8(e) && isFP8(b.getElementType())) &&
      (e != b.getElementType() || !(e.isF16() || e.isBF16())))
    return emitOpError("a and b must both be f16, both bf16 or both fp8");
  if (!acc.getElementType().isF32() || getResult().getType() != acc)
    return emitOpError("acc and result must be the same f32 tile");
  int64_t m = a.getDimSize(0), k = a.getDimSize(1), n = b.getDimSize(1);
  if (b.getDimSize(0) != k || acc.getDimSize(0) != m || acc.getDimSize(1) != n)
    return emitOpError("shapes do not chain: ") << a << " * " << b << " + " << acc;
  if (m % 16 || n % 8 || k % 16)
    return emitOpError("needs M % 16 == 0, N % 8 == 0 and K % 16 == 0, got ")
           << m << "x" << n << "x" << k;
  return verifyTileShape(*this, acc);
}

LogicalResult SparseDotOp::verify() {
  auto vals = cast<RankedTensorType>(getVals().getType());
  auto meta = cast<RankedTensorType>(getMeta().getType());
  auto b = cast<RankedTensorType>(getB().getType());
  auto acc = cast<RankedTensorType>(getAcc().getType());
  if (vals.getRank() != 2 || meta.getRank() != 2 || b.getRank() != 2 ||
      acc.getRank() != 2)
    return emitOpError("operands must be 2-D tiles");
  Type e = vals.getElementType();
  if (e != b.getElementType() || !(e.isF16() || e.isBF16()))
    return emitOpError("vals and b must both be f16 or both bf16");
  if (!meta.getElementType().isInteger(16))
    return emitOpError("meta must be an i16 tile, got ") << meta;
  if (!acc.getElementType().isF32() || getResult().getType() != acc)
    return emitOpError("acc and result must be the same f32 tile");
  int64_t m = vals.getDimSize(0), k = 2 * vals.getDimSize(1),
          n = b.getDimSize(1);
  if (b.getDimSize(0) != k || acc.getDimSize(0) != m || acc.getDimSize(1) != n)
    return emitOpError("shapes do not chain: ")
           << vals << " (K = " << k << ") * " << b << " + " << acc;
  if (meta.getDimSize(0) != m || meta.getDimSize(1) * 16 != k)
    return emitOpError("meta must be [") << m << ", " << k / 16 << "] for K = "
                                         << k << ", got " << meta;
  if (m % 16 || n % 8 || k % 32)
    return emitOpError("needs M % 16 == 0, N % 8 == 0 and K % 32 == 0, got ")
           << m << "x" << n << "x" << k;
  return verifyTileShape(*this, acc);
}

LogicalResult DescLoadOp::verify() {
  auto t = cast<RankedTensorType>(getResult().getType());
  if (t.getRank() != 2)
    return emitOpError("loads a 2-D block, got ") << t;
  if (t.getElementType() != getDesc().getType().getElement())
    return emitOpError("block element type ")
           << t.getElementType() << " differs from the descriptor's "
           << getDesc().getType().getElement();
  return verifyTileShape(*this, t);
}

LogicalResult DescStoreOp::verify() {
  auto t = cast<RankedTensorType>(getValue().getType());
  if (t.getRank() != 2)
    return emitOpError("stores a 2-D block, got ") << t;
  if (t.getElementType() != getDesc().getType().getElement())
    return emitOpError("block element type ")
           << t.getElementType() << " differs from the descriptor's "
           << getDesc().getType().getElement();
  if (getTma() && (t.getDimSize(0) > 256 || t.getDimSize(1) % 64))
    return emitOpError("a TMA store takes at most 256 rows in panels of 64 "
                       "columns, got ")
           << t;
  return verifyTileShape(*this, t);
}

LogicalResult RingCopyOp::verify() {
  int64_t panel = getLayout().panelCols(getCols());
  if (getCols() % panel)
    return emitOpError("a block of ")
           << getCols() << " columns is not whole panels of " << panel << " ("
           << getLayout() << ")";
  return success();
}

LogicalResult RingCopyPtrsOp::verify() {
  // Panels of 64 columns with the 128-byte swizzle, or one of 32 with the
  // 64-byte swizzle (a [rows, 32] block: the K-major A of a BK 32 loop).
  int64_t swizzle = getLayout().getSwizzle();
  if (!(swizzle == 128 && getCols() % 64 == 0) &&
      !(swizzle == 64 && getCols() == 32))
    return emitOpError("cp.async fills a stage in panels of 64 columns with "
                       "the 128-byte swizzle (or one of 32 with the 64-byte "
                       "swizzle), got ")
           << getLayout() << " for " << getCols() << " columns";
  return success();
}

LogicalResult RingDotOp::verify() {
  if (bool(getA()) == bool(getALayout()))
    return emitOpError("A is in registers (a) or in the stage in a shared "
                       "layout (a_layout): exactly one");
  if (auto al = getALayoutAttr(); al && al.getSwizzle() == 0)
    return emitOpError("wgmma reads A through a descriptor: a_layout must be "
                       "swizzled, got ")
           << al;
  if (getBLayout().getSwizzle() != 128 && !getMmaSync() &&
      !(getBKmajor() && getBLayout().getSwizzle() == 64))
    return emitOpError("wgmma reads B in panels of 64 columns with the "
                       "128-byte swizzle (K-major: or one of 32 with the "
                       "64-byte swizzle), got ")
           << getBLayout();
  if (getMmaSync() && (!getSync() || getMetaOffset()))
    return emitOpError("mma_sync waits for its MMAs on a dense A: it needs "
                       "`sync` and no sparse A (meta_offset)");
  if (!getMetaOffset() && (getMetaAlternates() || getMetaPitch()))
    return emitOpError("meta_alternates and meta_pitch describe sparse A's "
                       "metadata: they need meta_offset");
  if (getA() && getMetaOffset())
    return emitOpError("a sparse A (meta_offset) is read from the ring, not "
                       "from registers (a)");
  if (auto a = getA()) {
    auto at = cast<RankedTensorType>(a.getType());
    auto acc = cast<RankedTensorType>(getAcc().getType());
    if (at.getRank() != 2 || at.getDimSize(0) != acc.getDimSize(0) ||
        at.getDimSize(1) != getK() || at.getElementType() != getOperandType())
      return emitOpError("register A must be [M, K] = [")
             << acc.getDimSize(0) << ", " << getK() << "] of "
             << getOperandType() << ", got " << a.getType();
  }
  if (getMetaCol() && !getMetaPitch())
    return emitOpError("meta_col places a step's metadata inside a widened "
                       "box: it needs meta_pitch");
  // Sparse wgmma takes k32 steps; a lane reads a metadata row with 16-byte
  // shared-memory loads, so rows start 16 bytes apart and hold the K/16 i16.
  if (getMetaOffset() && getK() % 32)
    return emitOpError("sparse A needs K a multiple of 32 (k32 wgmma), got ")
           << getK();
  if (!getMetaOffset())
    return success();
  int64_t pitch = getMetaPitch().value_or(getK() / 16);
  if (pitch % 8 || pitch < getK() / 16)
    return emitOpError("metadata rows must be whole 16-byte units (meta_pitch "
                       "a multiple of 8 i16) holding K/16 = ")
           << getK() / 16 << " i16, got a pitch of " << pitch;
  return success();
}

LogicalResult WarpSpecializeOp::verify() {
  if (getProducerWarps() != 1 && getProducerWarps() != 4)
    return emitOpError("the producer is 1 warp or 4 (a warpgroup), got ")
           << getProducerWarps();
  if (bool(getProducerRegs()) != bool(getConsumerRegs()) ||
      bool(getProducerRegs()) != (getProducerWarps() == 4))
    return emitOpError("register counts go with a producer warpgroup "
                       "(setmaxnreg works on whole warpgroups), and both");
  if (getConsumerGroups() != 1 && getConsumerGroups() != 2)
    return emitOpError("consumer_groups is 1 (cooperative) or 2 (ping-pong), "
                       "got ")
           << getConsumerGroups();
  if (getConsumerGroups() == 2 &&
      (getProducerWarps() != 4 || getBlocksPerSm() != 1))
    return emitOpError("ping-pong consumers need a producer warpgroup and "
                       "one block per SM");
  if (getProducerRegs())
    for (int64_t regs : {int64_t(*getProducerRegs()), int64_t(*getConsumerRegs())})
      if (regs < 24 || regs > 256 || regs % 8)
        return emitOpError("register counts must be multiples of 8 from 24 "
                           "to 256 (setmaxnreg), got ")
               << regs;
  // The producer computes scalars and issues copies. A producer warpgroup
  // may also compute tiles of addresses and masks (a pointer ring's
  // copies), spread over its own threads; nothing that would move data
  // between them (a layout conversion, a reduction, a dot) or read memory
  // into a tile.
  bool tiles = getProducerWarps() == 4;
  WalkResult producer = getProducer().walk([&](Operation *op) {
    bool tileResult = llvm::any_of(
        op->getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); });
    bool tileMath =
        tiles && isPure(op) &&
        !isa<DotOp, SparseDotOp, ReduceOp, ScanOp, ConvertLayoutOp>(op);
    if (isa<RingWaitOp, RingDotOp, RingDrainOp, StoreOp>(op) ||
        (tileResult && !tileMath)) {
      op->emitOpError("cannot run in the producer warpgroup (only scalar "
                      "work, ring copies and a warpgroup's address tiles "
                      "can)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (producer.wasInterrupted())
    return failure();
  WalkResult consumer = getConsumer().walk([&](Operation *op) {
    if (isa<RingCopyOp, RingExpectOp, RingAcquireOp, ProducerOp>(op)) {
      op->emitOpError("belongs to the producer warpgroup, not the consumers");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(consumer.wasInterrupted());
}

/// Ops of ping-pong consumer groups live in the consumer region of a
/// tile.warp_specialize with two groups.
static LogicalResult verifyInPingPongConsumers(Operation *op) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (auto ws = dyn_cast<WarpSpecializeOp>(p)) {
      if (ws.getConsumerGroups() > 1 &&
          ws.getConsumer().isAncestor(op->getParentRegion()))
        return success();
      break;
    }
  return op->emitOpError("only runs in the consumer region of a ping-pong "
                         "tile.warp_specialize (consumer_groups = 2)");
}

LogicalResult ConsumerGroupOp::verify() {
  return verifyInPingPongConsumers(*this);
}
LogicalResult TurnWaitOp::verify() { return verifyInPingPongConsumers(*this); }
LogicalResult TurnPassOp::verify() { return verifyInPingPongConsumers(*this); }
