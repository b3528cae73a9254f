//===- PackByteStores.cpp - One word's bytes stored as the word -----------===//
//
// sparsetile-pack-byte-stores runs after convert-tile-to-gpu and the
// canonicalizer and CSE behind it. A thread's vector store reaches it as an
// llvm.insertelement chain of scalars, one per lane. When lane i of a
// vector<N x iK> is trunci(W >> i*K) (lane 0: trunci(W)) for one integer W,
// the vector is W's low N*K bits, little-endian, and the pass stores those.
//
// Why: the 2:4 mask kernels compute a block row's four i8 flags as bytes of
// one word (sparse24.tile, mask_bytes: a nibble spread by a multiply). Left
// as four lanes, LLVM simplifies each lane on its own (demanded bits) and
// the NVPTX backend packs them again with prmt: about twelve instructions a
// row where the word takes three. Only exact pieces are matched: any other
// lane keeps the store as it was.
//
//===----------------------------------------------------------------------===//

#include "Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace sparsetile {
#define GEN_PASS_DEF_PACKBYTESTORES
#include "Conversion/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;

namespace {

/// The word W whose pieces the vector `v` holds (see the file comment), or
/// null.
Value wordOf(Value v) {
  auto vt = dyn_cast<VectorType>(v.getType());
  if (!vt || vt.getRank() != 1 || vt.isScalable())
    return {};
  auto lane = dyn_cast<IntegerType>(vt.getElementType());
  int64_t n = vt.getNumElements();
  if (!lane || n < 2)
    return {};
  // Walking the chain back from the store, the first insert seen into a
  // lane is the one that stands.
  SmallVector<Value> lanes(n);
  while (auto ins = v.getDefiningOp<LLVM::InsertElementOp>()) {
    APInt at;
    if (!matchPattern(ins.getPosition(), m_ConstantInt(&at)) ||
        at.getZExtValue() >= uint64_t(n))
      return {};
    Value &slot = lanes[at.getZExtValue()];
    if (!slot)
      slot = ins.getValue();
    v = ins.getVector();
  }
  unsigned bits = lane.getWidth();
  Value word;
  for (auto [i, piece] : llvm::enumerate(lanes)) {
    auto trunc = piece ? piece.getDefiningOp<arith::TruncIOp>() : nullptr;
    if (!trunc)
      return {};
    Value src = trunc.getIn();
    if (i > 0) {
      Operation *shift = src.getDefiningOp();
      APInt amount;
      if (!shift || !isa<arith::ShRUIOp, arith::ShRSIOp>(shift) ||
          !matchPattern(shift->getOperand(1), m_ConstantInt(&amount)) ||
          amount.getZExtValue() != i * bits)
        return {};
      src = shift->getOperand(0);
    }
    if (word && src != word)
      return {};
    word = src;
  }
  // An arithmetic shift brings in sign bits past the word's width, so the
  // pieces must lie inside it.
  if (cast<IntegerType>(word.getType()).getWidth() < bits * n)
    return {};
  return word;
}

struct PackByteStoresPass
    : public sparsetile::impl::PackByteStoresBase<PackByteStoresPass> {
  void runOnOperation() override {
    getOperation()->walk([](LLVM::StoreOp store) {
      Value word = wordOf(store.getValue());
      if (!word)
        return;
      auto vt = cast<VectorType>(store.getValue().getType());
      OpBuilder b(store);
      auto wide = b.getIntegerType(
          unsigned(vt.getNumElements() * vt.getElementTypeBitWidth()));
      if (word.getType() != wide)
        word = b.create<arith::TruncIOp>(store.getLoc(), wide, word);
      // The chain left behind is dead; the canonicalizer removes it.
      store.getValueMutable().assign(word);
    });
  }
};

} // namespace
