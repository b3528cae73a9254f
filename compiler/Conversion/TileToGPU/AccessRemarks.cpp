//===- AccessRemarks.cpp - Why a global access is narrow ------------------===//
//
// Each walk below goes back from a value whose AxisInfo fact is too weak,
// through the ops that only pass facts on (adds, casts, broadcasts), to the
// value that lost it, and judges it:
//
//   Fine     the fact holds here;
//   Inherent the access really is strided or gathered (a product with a
//            stride, a division, a loaded index) or misaligned by a known
//            constant: nothing to fix, no remark;
//   Fixable  the fact was lost at a `%` AxisInfo cannot follow, a min/max or
//            where, a loop-carried value, or an integer parameter whose
//            divisibility the compile did not know: remark, with the fix.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/AccessRemarks.h"
#include "Conversion/PerfRemarks.h"
#include "Dialect/Tile/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

enum class Verdict { Fine, Inherent, Fixable };

struct Finding {
  Verdict verdict = Verdict::Fine;
  std::string why; ///< For Fixable: the cause, then "; fix: ...".
};

Finding inherent() { return {Verdict::Inherent, ""}; }

/// "line 7, column 12" of an op's DSL location (empty if it has none).
std::string where(Location l) {
  FileLineColLoc fl = dslLocation(l);
  if (!fl)
    return "";
  return "line " + std::to_string(fl.getLine()) + ", column " +
         std::to_string(fl.getColumn());
}

/// The first Fixable finding among `fs`, else Inherent if any, else Fine.
Finding worst(ArrayRef<Finding> fs) {
  Finding out;
  for (const Finding &f : fs) {
    if (f.verdict == Verdict::Fixable)
      return f;
    if (f.verdict == Verdict::Inherent)
      out = f;
  }
  return out;
}

/// Ops that pass their operands' facts on unchanged or combine them
/// without losing any by themselves.
bool passesFactsOn(Operation *op) {
  return isa<AddPtrOp, arith::AddIOp, arith::SubIOp, arith::ExtSIOp,
             arith::ExtUIOp, arith::TruncIOp, arith::IndexCastOp, SplatOp,
             BroadcastOp, ExpandDimsOp, ConvertLayoutOp>(op);
}

class Walker {
public:
  explicit Walker(const AxisInfoAnalysis &axis) : axis(axis) {}

  /// Why `v` is neither contiguous nor constant over `need` elements.
  Finding contiguity(Value v, int64_t need, int depth = 0) {
    AxisInfo a = axis.get(v);
    if (a.contiguity >= need || a.constancy >= need)
      return {};
    if (depth > 64 || --budget < 0)
      return inherent();
    if (auto arg = dyn_cast<BlockArgument>(v))
      return loopCarried(arg);
    Operation *def = v.getDefiningOp();
    if (passesFactsOn(def)) {
      SmallVector<Finding> fs;
      for (Value o : def->getOperands())
        fs.push_back(contiguity(o, need, depth + 1));
      // Two runs added (a row and a column index): genuinely strided.
      return worst(fs).verdict == Verdict::Fine ? inherent() : worst(fs);
    }
    bool hadRuns = llvm::any_of(def->getOperands(), [&](Value o) {
      return axis.get(o).contiguity >= need;
    });
    if (isa<arith::RemSIOp, arith::RemUIOp>(def)) {
      Finding deeper = contiguity(def->getOperand(0), need, depth + 1);
      if (deeper.verdict != Verdict::Fine || !hadRuns)
        return deeper.verdict == Verdict::Fine ? inherent() : deeper;
      return {Verdict::Fixable,
              "the offsets' contiguity is unknown after the `%` at " +
                  where(def->getLoc()) +
                  " (runs survive only `%` by a power-of-two constant of a "
                  "value known to be >= 0); fix: keep the index in range "
                  "with a mask (`mask=offs < n`) instead of `% n`, or "
                  "state the runs with `max_contiguous`/`multiple_of`"};
    }
    if (isa<arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp,
            arith::SelectOp>(def) &&
        hadRuns)
      return {Verdict::Fixable,
              "the offsets' contiguity is unknown after the clamp or "
              "`where` at " +
                  where(def->getLoc()) +
                  "; fix: load the unclamped offsets under a mask "
                  "(`mask=offs < n`), or state the runs with "
                  "`max_contiguous`/`multiple_of`"};
    // Products with a stride, quotients, loaded indices: strided or
    // gathered on purpose.
    return inherent();
  }

  /// Why `v` (elements; pointers: bytes) is not known to be a multiple of
  /// `need`, as far as run-time values are concerned.
  Finding divisibility(Value v, int64_t need, int depth = 0) {
    AxisInfo a = axis.get(v);
    if (need <= 1 || a.divisibility >= need)
      return {};
    if (depth > 64 || --budget < 0)
      return inherent();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (auto loop = dyn_cast<scf::ForOp>(owner);
          loop && arg == loop.getInductionVar())
        return worst({divisibility(loop.getLowerBound(), need, depth + 1),
                      divisibility(loop.getStep(), need, depth + 1)});
      if (isa<func::FuncOp>(owner))
        return unknownParameter(arg, need);
      return loopCarried(arg);
    }
    Operation *def = v.getDefiningOp();
    if (auto ap = dyn_cast<AddPtrOp>(def)) {
      int64_t bytes = std::max<int64_t>(
          1, cast<PointerType>(elementType(ap.getType()))
                     .getPointee()
                     .getIntOrFloatBitWidth() /
                 8);
      return worst({divisibility(ap.getPtr(), need, depth + 1),
                    divisibility(ap.getOffset(), (need + bytes - 1) / bytes,
                                 depth + 1)});
    }
    if (passesFactsOn(def) ||
        isa<arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp,
            arith::RemSIOp, arith::RemUIOp>(def)) {
      SmallVector<Finding> fs;
      // A remainder's divisor only matters when it is not a constant.
      for (Value o : def->getOperands())
        fs.push_back(divisibility(o, need, depth + 1));
      return worst(fs);
    }
    if (isa<arith::MulIOp>(def)) {
      // x * y is a multiple of need when x is one of need / (what y is a
      // multiple of), or the other way round.
      SmallVector<Finding> fs;
      for (int i = 0; i < 2; ++i) {
        int64_t other = axis.get(def->getOperand(1 - i)).contiguity > 1
                            ? 1
                            : axis.get(def->getOperand(1 - i)).divisibility;
        fs.push_back(divisibility(def->getOperand(i),
                                  std::max<int64_t>(1, need / other),
                                  depth + 1));
      }
      return worst(fs);
    }
    if (auto shl = dyn_cast<arith::ShLIOp>(def)) {
      auto shift = getConstantIntValue(shl.getRhs());
      if (shift && *shift >= 0 && *shift < 62)
        return divisibility(shl.getLhs(),
                            std::max<int64_t>(1, need >> *shift), depth + 1);
    }
    // Constants (a known misalignment), program ids, loaded values,
    // arange's consecutive values: nothing a hint would fix.
    return inherent();
  }

  /// Why the mask `m` is not constant over `need` elements.
  Finding constancy(Value m, int64_t need, int depth = 0) {
    AxisInfo a = axis.get(m);
    if (a.constancy >= need)
      return {};
    if (depth > 64 || --budget < 0)
      return inherent();
    Operation *def = m.getDefiningOp();
    if (!def)
      return inherent();
    if (auto cmp = dyn_cast<arith::CmpIOp>(def)) {
      // (start + i) < bound keeps its value over aligned groups of `need`
      // when start and bound are multiples of need (AxisInfo's rule).
      if (axis.get(cmp.getLhs()).contiguity < need)
        return inherent();
      Finding f = worst({divisibility(cmp.getLhs(), need, depth + 1),
                         divisibility(cmp.getRhs(), need, depth + 1)});
      if (f.verdict == Verdict::Fixable)
        f.why = "the mask at " + where(def->getLoc()) +
                " may change inside a run: " + f.why;
      return f;
    }
    if (isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp, BroadcastOp,
            ExpandDimsOp, ConvertLayoutOp>(def)) {
      SmallVector<Finding> fs;
      for (Value o : def->getOperands())
        fs.push_back(constancy(o, need, depth + 1));
      return worst(fs);
    }
    return inherent();
  }

private:
  Finding unknownParameter(BlockArgument arg, int64_t need) {
    std::string name = "#" + std::to_string(arg.getArgNumber());
    if (auto n = dyn_cast<NameLoc>(arg.getLoc()))
      name = n.getName().str();
    return {Verdict::Fixable,
            "the alignment is unknown: integer parameter `" + name +
                "` is not known to be a multiple of " + std::to_string(need) +
                "; fix: the JIT compiles for multiples of 16 by itself when "
                "the argument is one (stc: --div16 " +
                name + "), so pad it to a multiple of 16, or state it with "
                       "`multiple_of`"};
  }

  Finding loopCarried(BlockArgument arg) {
    auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    if (!loop || arg == loop.getInductionVar())
      return inherent();
    return {Verdict::Fixable,
            "the address is carried through the loop at " +
                where(loop.getLoc()) +
                ", and a value carried by a loop has no known contiguity or "
                "alignment; fix: compute it from the induction variable in "
                "each iteration (base + k * stride)"};
  }

  const AxisInfoAnalysis &axis;
  /// Values visited, at most: the walks branch at every binary op, and an
  /// address is a DAG that shares subexpressions.
  int budget = 1024;
};

} // namespace

void sparsetile::remarkNarrowAccess(const AxisInfoAnalysis &axis,
                                    Operation *site, Value ptr, Value mask,
                                    int64_t run, int64_t bytes,
                                    int64_t width) {
  // One element per thread, or elements of 16 bytes: scalar is the best.
  int64_t best = std::min(run, 16 / std::max<int64_t>(bytes, 1));
  if (best <= 1 || width >= best)
    return;
  Walker w(axis);
  AxisInfo p = axis.get(ptr);
  Finding f;
  if (p.contiguity < best)
    f = w.contiguity(ptr, best);
  else if (p.divisibility < best * bytes)
    f = w.divisibility(ptr, best * bytes);
  else if (mask)
    f = w.constancy(mask, best);
  if (f.verdict != Verdict::Fixable)
    return;
  emitPerfRemark(site, "scalar-access",
                 Twine(isa<StoreOp>(site) ? "store" : "load") +
                     " issued as " + Twine(width * bytes) +
                     "-byte accesses where each thread's run of " +
                     Twine(run) + " elements could use " +
                     Twine(best * bytes) + "-byte ones: " + f.why);
}
