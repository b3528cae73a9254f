//===- ExpandDescLoad.cpp - Block loads as masked pointer loads -----------===//
//
// tile-expand-desc-load turns every tile.desc_load left after
// tile-pipeline-tma (other targets than sm_90a, loops it does not match)
// into tile.desc_fields (the descriptor block's base, rows, cols, ld) and a
// masked tile.load that reads zeros outside the tensor, as TMA would; and
// every tile.desc_store that tile-pipeline-tma did not make a TMA store into
// a masked tile.store that drops what falls outside. After it the rest of
// the compiler never sees a desc_load, nor a desc_store without `tma`.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"
#include "Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace sparsetile {
#define GEN_PASS_DEF_EXPANDDESCLOAD
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

Value i32c(OpBuilder &b, Location l, int64_t v) {
  return b.create<arith::ConstantIntOp>(l, b.getI32Type(), v);
}

/// A block of a descriptor's tensor as plain pointers: element (i, j) at
/// base + (row + i) ld + col + j, and the mask of the elements inside
/// [rows, cols].
struct BlockPointers {
  Value ptrs, mask;
};
BlockPointers blockPointers(OpBuilder &b, Location l, Value desc, Value row,
                            Value col, RankedTensorType type) {
  int64_t r = type.getDimSize(0), cc = type.getDimSize(1);
  Type elt = type.getElementType(), i32 = b.getI32Type();
  auto fields = b.create<DescFieldsOp>(l, PointerType::get(b.getContext(), elt),
                                       i32, i32, i32, desc);
  auto full = [&](Type t) { return RankedTensorType::get({r, cc}, t); };
  // Row and column indices of the block, broadcast to [R, C].
  auto index = [&](int64_t len, Value start, int axis) -> Value {
    Value ar = b.create<ArangeOp>(l, RankedTensorType::get({len}, i32), 0, len);
    Value s = b.create<SplatOp>(l, RankedTensorType::get({len}, i32), start);
    Value v = b.create<arith::AddIOp>(l, ar, s);
    SmallVector<int64_t> shape =
        axis == 0 ? SmallVector<int64_t>{len, 1} : SmallVector<int64_t>{1, len};
    v = b.create<ExpandDimsOp>(l, RankedTensorType::get(shape, i32), v,
                               axis == 0 ? 1 : 0);
    return b.create<BroadcastOp>(l, full(i32), v);
  };
  Value ri = index(r, row, 0), ci = index(cc, col, 1);
  auto splat = [&](Value s) {
    return b.create<SplatOp>(l, full(s.getType()), s);
  };
  Value zero = splat(i32c(b, l, 0));
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
    return b.create<arith::CmpIOp>(l, p, x, y);
  };
  // Each operand is named before its use: C++ leaves the order in which a
  // call's arguments are evaluated unspecified, and ops built inside them
  // would come out in a different order (and different PTX) under another
  // host compiler. This is the order g++ has always built them in.
  Value ciNonNeg = cmp(arith::CmpIPredicate::sge, ci, zero);
  Value riNonNeg = cmp(arith::CmpIPredicate::sge, ri, zero);
  Value nonNeg = b.create<arith::AndIOp>(l, riNonNeg, ciNonNeg);
  Value cols = splat(fields.getCols());
  Value ciIn = cmp(arith::CmpIPredicate::slt, ci, cols);
  Value rows = splat(fields.getRows());
  Value riIn = cmp(arith::CmpIPredicate::slt, ri, rows);
  Value inside = b.create<arith::AndIOp>(l, riIn, ciIn);
  Value mask = b.create<arith::AndIOp>(l, inside, nonNeg);
  Value off = b.create<arith::AddIOp>(
      l, b.create<arith::MulIOp>(l, ri, splat(fields.getLd())), ci);
  Value ptrs = b.create<AddPtrOp>(l, full(fields.getBase().getType()),
                                  splat(fields.getBase()), off);
  return {ptrs, mask};
}

/// desc_load -> desc_fields + a masked pointer load (zero outside).
void expand(DescLoadOp op) {
  OpBuilder b(op);
  Location l = op.getLoc();
  auto type = cast<RankedTensorType>(op.getType());
  BlockPointers p =
      blockPointers(b, l, op.getDesc(), op.getRow(), op.getCol(), type);
  auto full = RankedTensorType::get(type.getShape(), type.getElementType());
  Value other = b.create<SplatOp>(
      l, full,
      b.create<arith::ConstantOp>(l, b.getZeroAttr(type.getElementType())));
  Value v = b.create<LoadOp>(l, type, p.ptrs, p.mask, other);
  op.replaceAllUsesWith(v);
  op.erase();
}

/// desc_store (not a TMA store) -> desc_fields + a masked pointer store.
void expand(DescStoreOp op) {
  OpBuilder b(op);
  auto type = cast<RankedTensorType>(op.getValue().getType());
  BlockPointers p = blockPointers(b, op.getLoc(), op.getDesc(), op.getRow(),
                                  op.getCol(), type);
  b.create<StoreOp>(op.getLoc(), p.ptrs, op.getValue(), p.mask);
  op.erase();
}

struct ExpandDescLoadPass
    : public sparsetile::impl::ExpandDescLoadBase<ExpandDescLoadPass> {
  void runOnOperation() override {
    SmallVector<DescLoadOp> loads;
    SmallVector<DescStoreOp> stores;
    getOperation().walk([&](DescLoadOp op) { loads.push_back(op); });
    getOperation().walk([&](DescStoreOp op) {
      if (!op.getTma())
        stores.push_back(op);
    });
    for (DescLoadOp op : loads)
      expand(op);
    for (DescStoreOp op : stores)
      expand(op);
  }
};

} // namespace
