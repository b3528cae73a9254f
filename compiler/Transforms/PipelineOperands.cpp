//===- PipelineOperands.cpp - A dot operand as the rings copy it ---------===//
//
// What tile-pipeline-tma's forms (the K loop, PipelineTMA.cpp; chained
// dots, PipelineChain.cpp) share about one operand: a load_block or a load
// through a tile of pointers, maybe transposed, its block's shape and the
// shared layout the ring copies it in, and whether cp.async can copy its
// pointers' runs; plus the small builders both forms use.
//
//===----------------------------------------------------------------------===//

#include "Conversion/AxisInfo.h"
#include "Conversion/PerfRemarks.h"
#include "Dialect/Tile/TileDialect.h"
#include "Dialect/Tile/TileLayouts.h"
#include "Transforms/PipelineRing.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace sparsetile::pipeline_ring {

/// A tile of zeros (splat of a 0.0 constant, or a zero dense constant).
bool isZeroTile(Value v) {
  if (auto sp = v.getDefiningOp<SplatOp>())
    v = sp.getSrc();
  Attribute a;
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    a = c.getValue();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(a))
    a = dense.isSplat() ? dense.getSplatValue<Attribute>() : Attribute();
  auto f = dyn_cast_or_null<FloatAttr>(a);
  return f && f.getValue().isZero() && !f.getValue().isNegative();
}

Value i32c(OpBuilder &b, Location l, int64_t v) {
  return b.create<arith::ConstantIntOp>(l, b.getI32Type(), v);
}

/// The original loop's induction value at iteration `i`: lo + i * step.
Value inductionAt(OpBuilder &b, scf::ForOp loop, Value i) {
  Location l = loop.getLoc();
  return b.create<arith::AddIOp>(
      l, loop.getLowerBound(),
      b.create<arith::MulIOp>(l, i, loop.getStep()));
}

/// A dot operand loaded through a [rows, cols] tile of pointers to f16 or
/// bf16, as a Triton kernel loads it: the ring copies it in the layout of a
/// TMA block (panels of 64 columns), so cols must be a multiple of 64, and
/// masked-off elements must read as zero (cp.async's zero fill). A
/// transposed block (trans(load(...)): attention's K) is copied as loaded and
/// read transposed, as trans(load_block) is. Whether the pointers come in
/// aligned runs is AxisInfo's to say (copiesInRuns).
static std::optional<Operand> pointerOperandOf(Operand o, LoadOp p, Block *body,
                                               std::string &why,
                                               bool halfPanel) {
  if (!p->hasOneUse() || p->getBlock() != body) {
    why = "an operand's load is used elsewhere or outside the loop";
    return std::nullopt;
  }
  auto t = dyn_cast<RankedTensorType>(p.getType());
  if (!t || t.getRank() != 2 || !(t.getElementType().isF16() ||
                                  t.getElementType().isBF16())) {
    why = "an operand loaded through pointers is not a 2-D f16 or bf16 tile";
    return std::nullopt;
  }
  if (p.getOther() && !isZeroTile(p.getOther())) {
    why = "an operand's load has other= that is not 0 (the ring's copies "
          "fill masked-off elements with zeros)";
    return std::nullopt;
  }
  o.ptrLoad = p;
  o.rows = t.getDimSize(0);
  o.cols = o.boxCols = t.getDimSize(1);
  // A K-major operand may be one 32-column panel (64-byte swizzled rows: K
  // steps of 32) where the caller allows it (halfPanel).
  if ((o.cols % 64 && !(halfPanel && o.cols == 32)) || o.rows % 8 ||
      o.rows > 256) {
    why = "a block loaded through pointers is [" + std::to_string(o.rows) +
          ", " + std::to_string(o.cols) +
          "]; the ring needs a multiple of 64 columns (32 for A not "
          "transposed or B transposed: one K-major panel) and a multiple "
          "of 8 rows, at most 256";
    return std::nullopt;
  }
  return o;
}

/// A dot operand's block: panels of 64 columns, or one of 32 (64-byte
/// swizzled rows) with `halfPanel` (sparse A's compressed values at K = 64,
/// from load_block) or `pointerHalfPanel` (an operand loaded through
/// pointers at K = 32, stored K-major: A as loaded, or B transposed, which
/// `isB` says).
std::optional<Operand> operandOf(Value v, Block *body, std::string &why,
                                 bool halfPanel, bool pointerHalfPanel,
                                 bool isB) {
  Operand o;
  if (auto t = v.getDefiningOp<TransOp>()) {
    if (!t->hasOneUse() || t->getBlock() != body) {
      why = "an operand's trans(...) is used elsewhere or outside the loop";
      return std::nullopt;
    }
    o.trans = t;
    v = t.getSrc();
  }
  if (auto p = v.getDefiningOp<LoadOp>(); p && !halfPanel)
    return pointerOperandOf(o, p, body, why,
                            pointerHalfPanel && bool(o.trans) == isB);
  o.load = v.getDefiningOp<DescLoadOp>();
  if (!o.load || !o.load->hasOneUse() || o.load->getBlock() != body) {
    why = o.load ? "an operand's load_block is used elsewhere or outside "
                   "the loop"
                 : "an operand is neither a load_block (or trans(load_block)) "
                   "nor a load through pointers in the loop body";
    return std::nullopt;
  }
  auto shape = cast<RankedTensorType>(o.load.getType()).getShape();
  o.rows = shape[0];
  o.cols = o.boxCols = shape[1];
  // TMA boxes of [rows, 64] 16-bit elements: 128-byte swizzled rows.
  if ((o.cols % 64 && !(halfPanel && o.cols == 32)) || o.rows % 8 ||
      o.rows > 256) {
    why = "a loaded block is [" + std::to_string(o.rows) + ", " +
          std::to_string(o.cols) +
          "]; TMA needs a multiple of 64 columns and a multiple of 8 rows, "
          "at most 256";
    return std::nullopt;
  }
  return o;
}

bool copiesInRuns(const Operand &o, const AxisInfoAnalysis &axis,
                  std::string &why) {
  // cp.async copies at least 4 bytes of one run under one mask value: the
  // pointers must come in aligned runs of two or more along the rows (the
  // runtime's divisibility variants and multiple_of / max_contiguous give
  // AxisInfo what it needs).
  LoadOp load = o.ptrLoad;
  AxisInfo p = axis.get(load.getPtr());
  int64_t run = std::min({p.contiguity, p.divisibility / 2, int64_t(8)});
  if (Value m = load.getMask())
    run = std::min(run, axis.get(m).constancy);
  if (run >= 2)
    return true;
  why = "an operand's pointers are not in aligned runs of two elements or "
        "more under one mask value (cp.async copies 4 bytes at least; "
        "AxisInfo: contiguity " +
        std::to_string(p.contiguity) + ", divisibility " +
        std::to_string(p.divisibility) +
        " bytes); fix: row strides that are multiples of 8 (the JIT's "
        "variants for multiples of 16), or multiple_of / max_contiguous";
  return false;
}

std::string pointerRingDeclined(func::FuncOp func) {
  auto flag = [&](const char *attr) {
    auto a = func->getAttrOfType<IntegerAttr>(attr);
    return a ? a.getInt() : 0;
  };
  if (flag(kPersistentAttr) || flag(kPingPongAttr) || flag(kClusterAttr) > 1)
    return "operands loaded through pointers are copied by every thread of "
           "the block (cp.async), a ring that @persistent(1), @pingpong(1) "
           "and @cluster kernels do not have; fix: load_block them";
  return "";
}

} // namespace sparsetile::pipeline_ring
