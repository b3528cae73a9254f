//===- TypeConverter.cpp - What a tile type becomes in one thread ---------===//
//
// See TypeConverter.h. The counts follow the layouts' definitions in
// TileLayouts.h: a blocked tile spreads its elements evenly over its
// threads, an mma.sync accumulator gives each thread four of every 16 x 8
// fragment of its warp, a wgmma accumulator four of every 8 columns of each
// 64-row block, and a slice keeps one element per output group.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/TypeConverter.h"
#include "Dialect/Tile/TileDialect.h"
#include "Dialect/Tile/TileLayouts.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

TileTypeConverter::TileTypeConverter(MLIRContext *ctx, int64_t numThreads)
    : threads(numThreads) {
  // Scalars, and anything else not named below, stay as they are.
  addConversion([](Type t) { return t; });
  addConversion([](FloatType t) { return registerType(t); });
  addConversion([ctx](PointerType) -> Type {
    return LLVM::LLVMPointerType::get(ctx, 1);
  });
  addConversion(
      [ctx](DescType) -> Type { return LLVM::LLVMPointerType::get(ctx, 1); });
  addConversion(
      [this](RankedTensorType t,
             SmallVectorImpl<Type> &out) -> std::optional<LogicalResult> {
        std::optional<int64_t> n = elementsPerThread(t);
        if (!n)
          return failure();
        Type elt = elementType(t);
        Type reg = isa<PointerType>(elt)
                       ? Type(LLVM::LLVMPointerType::get(t.getContext(), 1))
                       : registerType(elt);
        if (carriedInPairs(t))
          out.append(size_t(*n / 2), VectorType::get({2}, reg));
        else
          out.append(size_t(*n), reg);
        return success();
      });
}

Type TileTypeConverter::registerType(Type elt) {
  return isFP8(elt) ? Type(IntegerType::get(elt.getContext(), 8)) : elt;
}

bool TileTypeConverter::carriedInPairs(Type t) const {
  std::optional<int64_t> n = elementsPerThread(t);
  return n && carriedInPairs(elementType(t), size_t(*n));
}

bool TileTypeConverter::carriedInPairs(Type elt, size_t n) {
  // Carried one by one, 16-bit elements took a register each, and ptxas
  // repacked them with PRMT for every vector store after the loop or
  // branch: mvue24_compress_t's prefetched dY block held 16 registers where
  // 8 do and paid 30 PRMT a token block.
  return n % 2 == 0 && (isa<FloatType>(elt) || isa<IntegerType>(elt)) &&
         elt.getIntOrFloatBitWidth() == 16;
}

/// The elements per thread of `layout` over `shape`; none if it does not fit.
static std::optional<int64_t> countOf(Attribute layout, ArrayRef<int64_t> shape,
                                      int64_t numThreads) {
  int64_t elems = 1;
  for (int64_t d : shape)
    elems *= d;
  if (auto bl = dyn_cast<BlockedLayoutAttr>(layout)) {
    int64_t vec = bl.getVec(), threads = bl.getThreads();
    if (vec * threads == 0 || elems % (vec * threads))
      return std::nullopt;
    return elems / threads; // Threads past `threads` hold copies.
  }
  if (auto mma = dyn_cast<MmaLayoutAttr>(layout)) {
    if (shape.size() != 2 || !mmaSplits(shape[0], shape[1], mma.getWarpsM(),
                                        mma.getWarpsN(), numThreads))
      return std::nullopt;
    return shape[0] / (16 * mma.getWarpsM()) *
           (shape[1] / (8 * mma.getWarpsN())) * 4;
  }
  if (auto wg = dyn_cast<WgmmaLayoutAttr>(layout)) {
    if (shape.size() != 2 ||
        wgmmaGroups(shape[0], shape[1], numThreads) != wg.getGroups())
      return std::nullopt;
    return shape[0] / (64 * wg.getGroups()) * (shape[1] / 8) * 4;
  }
  if (auto sl = dyn_cast<SliceLayoutAttr>(layout)) {
    int64_t ax = sl.getAxis();
    if (ax < 0 || ax > int64_t(shape.size()))
      return std::nullopt;
    SmallVector<int64_t> parentShape(shape);
    parentShape.insert(parentShape.begin() + ax, sl.getSize());
    std::optional<int64_t> parent =
        countOf(sl.getParent(), parentShape, numThreads);
    if (!parent)
      return std::nullopt;
    // A blocked parent whose reduced dimension lies in each thread's runs
    // or repetitions keeps one element of each output group it held.
    if (auto bl = dyn_cast<BlockedLayoutAttr>(sl.getParent());
        bl && reducesInThread(parentShape, ax, {numThreads, bl.getVec()}))
      return *parent / sl.getSize();
    // Otherwise the outputs of a reduction done where the parent is held
    // (planHeldReduction): one slot an output group.
    std::optional<ThreadCoords> c = threadCoords(layout, shape, numThreads);
    if (!c)
      return std::nullopt;
    return int64_t(c->at.size());
  }
  return std::nullopt;
}

std::optional<int64_t> TileTypeConverter::elementsPerThread(Type t) const {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor || !tensor.getEncoding() || tensor.getShape().empty())
    return std::nullopt;
  auto [it, inserted] = counts.try_emplace(t);
  if (inserted)
    it->second = countOf(tensor.getEncoding(), tensor.getShape(), threads);
  return it->second;
}
