//===- AxisInfo.cpp - Contiguity and alignment of tile values -------------===//
//
// Implements the forward transfer functions of AxisInfoAnalysis. Each rule
// is stated for aligned runs/groups along the last dimension; all quantities
// are powers of two, so min() is gcd().
//
//===----------------------------------------------------------------------===//

#include "Conversion/AxisInfo.h"
#include "Dialect/Tile/TileDialect.h"

#include "llvm/Support/MathExtras.h"

#include <optional>

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

/// The largest power of two dividing `v` (kMax for 0).
static int64_t pow2Divisor(int64_t v) {
  if (v == 0)
    return AxisInfo::kMax;
  // |v| in uint64_t: -INT64_MIN overflows int64_t (found by fuzz_compile).
  uint64_t u = v < 0 ? 0 - uint64_t(v) : uint64_t(v);
  return int64_t(std::min<uint64_t>(u & (~u + 1), uint64_t(AxisInfo::kMax)));
}

/// Length of the last dimension, or kMax for scalars.
static int64_t lastDim(Type t) {
  auto s = shapeOf(t);
  return s.empty() ? AxisInfo::kMax : s.back();
}

static AxisInfo clampTo(AxisInfo a, Type t) {
  int64_t n = lastDim(t);
  a.contiguity = std::min(a.contiguity, n);
  a.constancy = std::min(a.constancy, n);
  return a;
}

/// What one step along a run moves: a pointer's pointee size in bytes (its
/// divisibility is in bytes), 1 for integers.
static int64_t unitBytes(Type t) {
  if (auto p = dyn_cast<PointerType>(elementType(t)))
    if (p.getPointee().isIntOrFloat())
      return std::max<int64_t>(1, p.getPointee().getIntOrFloatBitWidth() / 8);
  return 1;
}

/// Unknown values: scalars are still uniform across a tile.
static AxisInfo unknown(Type t) {
  AxisInfo a;
  if (!isa<RankedTensorType>(t))
    a.constancy = AxisInfo::kMax;
  return a;
}

/// Divisibility that holds for every element, not just for the first of
/// each contiguous run: [2^n, 2^n + 1, ...] is only divisible by 1.
static int64_t elementwiseDivisibility(const AxisInfo &a) {
  return a.contiguity > 1 ? 1 : a.divisibility;
}

/// The value of an integer constant, looking through splats.
static std::optional<int64_t> constantInt(Value v) {
  if (auto s = v.getDefiningOp<SplatOp>())
    v = s.getSrc();
  auto c = v.getDefiningOp<arith::ConstantOp>();
  if (!c)
    return std::nullopt;
  if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
    return i.getInt();
  if (auto d = dyn_cast<DenseIntElementsAttr>(c.getValue()); d && d.isSplat())
    return d.getSplatValue<APInt>().getSExtValue();
  return std::nullopt;
}

AxisInfoAnalysis::AxisInfoAnalysis(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    AxisInfo a = unknown(func.getArgument(i).getType());
    if (auto d = func.getArgAttrOfType<IntegerAttr>(i, kDivisibilityAttr))
      a.divisibility = d.getInt();
    info[func.getArgument(i)] = a;
  }
  for (Block &block : func.getBody())
    visitBlock(block);
}

AxisInfo AxisInfoAnalysis::get(Value v) const {
  auto it = info.find(v);
  return it == info.end() ? unknown(v.getType()) : it->second;
}

int64_t AxisInfoAnalysis::accessWidth(Value ptr, Value mask, int64_t maxElems,
                                      int64_t bytes) const {
  AxisInfo pi = get(ptr);
  int64_t width =
      std::min({maxElems, pi.contiguity,
                std::max<int64_t>(1, pi.divisibility / bytes), 16 / bytes});
  if (mask)
    width = std::min(width, get(mask).constancy);
  return std::max<int64_t>(width, 1);
}

AxisInfo sparsetile::meet(const AxisInfo &x, const AxisInfo &y,
                          int64_t unitBytes) {
  AxisInfo m;
  m.contiguity = std::min(x.contiguity, y.contiguity);
  // A side whose runs are cut shorter only knows the start of each shorter
  // run up to the run length: [16, 17, 18, 19] cut to runs of 2 starts at
  // 16 and 18, multiples of 2, not of 16 (pointers: of 2 elements' bytes).
  auto startDivisibility = [&](const AxisInfo &a) {
    return a.contiguity > m.contiguity
               ? std::min(a.divisibility,
                          std::min(m.contiguity * unitBytes, AxisInfo::kMax))
               : a.divisibility;
  };
  m.divisibility = std::min(startDivisibility(x), startDivisibility(y));
  m.constancy = std::min(x.constancy, y.constancy);
  m.nonNegative = x.nonNegative && y.nonNegative;
  return m;
}

static bool operator!=(const AxisInfo &x, const AxisInfo &y) {
  return x.contiguity != y.contiguity || x.divisibility != y.divisibility ||
         x.constancy != y.constancy || x.nonNegative != y.nonNegative;
}

void AxisInfoAnalysis::visitBlock(Block &block) {
  for (Operation &op : block) {
    --budget;
    if (auto forOp = dyn_cast<scf::ForOp>(op)) {
      visitFor(forOp);
      continue;
    }
    visit(&op);
    for (Region &region : op.getRegions())
      for (Block &inner : region)
        visitBlock(inner);
    // An scf.if result is one of its branches' yields: what both promise.
    if (auto ifOp = dyn_cast<scf::IfOp>(op); ifOp && ifOp.getNumResults()) {
      auto thenYield = ifOp.thenYield();
      auto elseYield = ifOp.elseYield();
      for (unsigned i = 0; i < ifOp.getNumResults(); ++i)
        info[ifOp.getResult(i)] =
            clampTo(meet(get(thenYield.getOperand(i)),
                         get(elseYield.getOperand(i)),
                         unitBytes(ifOp.getResult(i).getType())),
                    ifOp.getResult(i).getType());
    }
  }
}

/// A loop-carried value is its initial value or what the body yields, so
/// its facts are what both promise. The body is walked with the initial
/// values' facts, the iter_args are met with the yields, and the walk is
/// repeated until nothing changes (each round can only lower the facts).
/// Nested loops multiply the rounds, so after kMaxRounds the iter_args are
/// given up on (unknown) and the body walked once more: always sound. Once
/// the whole analysis has visited `budget` ops (deep nests of loops), loops
/// are given up on at once, so the walk stays linear.
void AxisInfoAnalysis::visitFor(scf::ForOp forOp) {
  // Loop induction variables: lo + k*step is divisible by gcd(lo, step).
  AxisInfo iv = unknown(forOp.getInductionVar().getType());
  iv.divisibility = std::min(get(forOp.getLowerBound()).divisibility,
                             get(forOp.getStep()).divisibility);
  info[forOp.getInductionVar()] = iv;

  constexpr int kMaxRounds = 4;
  auto args = forOp.getRegionIterArgs();
  auto yield = cast<scf::YieldOp>(forOp.getBody()->getTerminator());
  for (unsigned i = 0; i < args.size(); ++i)
    info[args[i]] = get(forOp.getInitArgs()[i]);
  bool stable = false;
  for (int round = 0; round < kMaxRounds && !stable && budget > 0; ++round) {
    visitBlock(*forOp.getBody());
    stable = true;
    for (unsigned i = 0; i < args.size(); ++i) {
      AxisInfo next = clampTo(
          meet(info[args[i]], get(yield.getOperand(i)),
               unitBytes(args[i].getType())),
          args[i].getType());
      if (next != info[args[i]]) {
        info[args[i]] = next;
        stable = false;
      }
    }
  }
  if (!stable) {
    for (Value arg : args)
      info[arg] = unknown(arg.getType());
    visitBlock(*forOp.getBody());
  }
  for (unsigned i = 0; i < args.size(); ++i)
    info[forOp.getResult(i)] = info[args[i]];
}

void AxisInfoAnalysis::visit(Operation *op) {
  if (op->getNumResults() != 1)
    return;
  Value r = op->getResult(0);
  Type t = r.getType();
  auto in = [&](unsigned i) { return get(op->getOperand(i)); };
  AxisInfo a = unknown(t);

  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    a.constancy = AxisInfo::kMax;
    if (std::optional<int64_t> v = constantInt(r)) {
      a.divisibility = pow2Divisor(*v);
      a.nonNegative = *v >= 0;
    }
  } else if (auto ar = dyn_cast<ArangeOp>(op)) {
    a.contiguity = lastDim(t);
    int32_t start = int32_t(ar.getStart()); // I32Attr reads back unsigned.
    a.divisibility = pow2Divisor(start);
    a.nonNegative = start >= 0;
  } else if (auto as = dyn_cast<tile::AssumeOp>(op)) {
    // A promise adds to what is known (both hold if the user is right).
    a = in(0);
    if (auto d = as.getDivisibility())
      a.divisibility = std::max<int64_t>(
          a.divisibility, std::min<int64_t>(*d, AxisInfo::kMax));
    if (auto c = as.getContiguity())
      a.contiguity = std::max<int64_t>(
          a.contiguity, std::min<int64_t>(*c, AxisInfo::kMax));
  } else if (isa<ConvertLayoutOp>(op)) {
    a = in(0); // The same values, held by other threads.
  } else if (isa<SplatOp>(op)) {
    a = in(0);
    a.contiguity = 1;
    a.constancy = AxisInfo::kMax;
  } else if (auto e = dyn_cast<ExpandDimsOp>(op)) {
    a = in(0);
    if (e.getAxis() == int32_t(shapeOf(t).size()) - 1) { // New last dim of 1.
      a.divisibility = elementwiseDivisibility(a);
      a.contiguity = 1;
      a.constancy = 1;
    }
  } else if (isa<BroadcastOp>(op)) {
    a = in(0);
    auto src = shapeOf(op->getOperand(0).getType());
    if (src.back() == 1) { // The last dimension is stretched: all equal.
      a.contiguity = 1;
      a.constancy = AxisInfo::kMax;
    }
  } else if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
                 arith::IndexCastOp>(op)) {
    a = in(0);
    // A truncation may turn a large value negative.
    a.nonNegative =
        isa<arith::ExtUIOp>(op) || (a.nonNegative && !isa<arith::TruncIOp>(op));
  } else if (isa<arith::AddIOp>(op)) {
    AxisInfo x = in(0), y = in(1);
    a.contiguity = std::max(std::min(x.contiguity, y.constancy),
                            std::min(y.contiguity, x.constancy));
    a.divisibility = std::min(x.divisibility, y.divisibility);
    a.constancy = std::min(x.constancy, y.constancy);
    a.nonNegative = x.nonNegative && y.nonNegative;
  } else if (isa<arith::SubIOp>(op)) {
    AxisInfo x = in(0), y = in(1);
    a.contiguity = std::min(x.contiguity, y.constancy);
    a.divisibility = std::min(x.divisibility, y.divisibility);
    a.constancy = std::min(x.constancy, y.constancy);
  } else if (isa<arith::MulIOp>(op) &&
             (constantInt(op->getOperand(0)) == 1 ||
              constantInt(op->getOperand(1)) == 1)) {
    // `offs * stride` with a stride specialized to 1 (a splat the folders
    // leave alone): the other operand, runs and all.
    a = in(constantInt(op->getOperand(0)) == 1 ? 1 : 0);
  } else if (isa<arith::MulIOp>(op)) {
    // The product has contiguity 1, so its divisibility must hold for every
    // element, not only for the run starts the operands' facts describe.
    AxisInfo x = in(0), y = in(1);
    a.divisibility = std::min<int64_t>(elementwiseDivisibility(x) *
                                           elementwiseDivisibility(y),
                                       AxisInfo::kMax);
    a.constancy = std::min(x.constancy, y.constancy);
    a.nonNegative = x.nonNegative && y.nonNegative;
  } else if (isa<arith::DivSIOp, arith::DivUIOp>(op)) {
    // x / c with c a power of two: an aligned group of g <= c consecutive
    // values starting at a multiple of g has one quotient.
    AxisInfo x = in(0);
    a.constancy = std::min(x.constancy, in(1).constancy);
    if (auto divisor = constantInt(op->getOperand(1))) {
      if (*divisor > 0 && llvm::isPowerOf2_64(*divisor)) {
        a.constancy = std::max(
            a.constancy, std::min({x.contiguity, x.divisibility, *divisor}));
        // Consecutive groups have consecutive quotients: nothing divides
        // them all unless the dividend was uniform.
        a.divisibility =
            std::max<int64_t>(1, elementwiseDivisibility(x) / *divisor);
        a.nonNegative = x.nonNegative;
      }
    }
  } else if (isa<arith::RemSIOp, arith::RemUIOp>(op)) {
    // x % c with c a power of two: an aligned group of g <= c consecutive
    // values starting at a multiple of g does not wrap, so it stays
    // consecutive and starts at a multiple of g (the column `q % BLK` of a
    // row of blocks). A signed remainder needs x >= 0: -4 % 4, -3 % 4 is
    // 0, -3.
    AxisInfo x = in(0);
    a.constancy = std::min(x.constancy, in(1).constancy);
    auto divisor = constantInt(op->getOperand(1));
    if (divisor && *divisor > 0 && llvm::isPowerOf2_64(*divisor) &&
        (isa<arith::RemUIOp>(op) || x.nonNegative)) {
      int64_t g = std::min({x.contiguity, x.divisibility, *divisor});
      a.contiguity = g;
      a.divisibility =
          x.contiguity > 1 ? g : std::min(x.divisibility, *divisor);
      a.constancy = x.constancy;
      a.nonNegative = true;
    }
  } else if (isa<arith::ShLIOp>(op)) {
    AxisInfo x = in(0);
    a.constancy = std::min(x.constancy, in(1).constancy);
    // Only a shift in [0, 30) scales the divisibility; a negative one
    // (poison in the IR) was shifted by here (UBSan).
    if (auto shift = constantInt(op->getOperand(1));
        shift && *shift >= 0 && *shift < 30)
      a.divisibility = std::min<int64_t>(elementwiseDivisibility(x) << *shift,
                                         AxisInfo::kMax);
  } else if (isa<arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp,
                 arith::MaxUIOp>(op)) {
    // Every element is one of the operands' elements: what divides both
    // divides it (a start clamped to another multiple of 16 stays one). Runs
    // are not kept, as the pick may switch inside one.
    AxisInfo x = in(0), y = in(1);
    a.divisibility =
        std::min(elementwiseDivisibility(x), elementwiseDivisibility(y));
    a.constancy = std::min(x.constancy, y.constancy);
  } else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    // (a0 + i) < b is constant over an aligned group of g when the group
    // start and b are multiples of g and b does not vary within the group.
    AxisInfo x = in(0), y = in(1);
    a.constancy = std::min(x.constancy, y.constancy);
    if (x.contiguity > 1)
      a.constancy =
          std::max(a.constancy, std::min({x.contiguity, x.divisibility,
                                          y.divisibility, y.constancy}));
  } else if (isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::SelectOp,
                 arith::CmpFOp>(op)) {
    a.constancy = AxisInfo::kMax;
    for (Value v : op->getOperands())
      a.constancy = std::min(a.constancy, get(v).constancy);
  } else if (auto ap = dyn_cast<AddPtrOp>(op)) {
    AxisInfo p = in(0), o = in(1);
    int64_t bytes = std::max<int64_t>(
        1,
        cast<PointerType>(elementType(t)).getPointee().getIntOrFloatBitWidth() /
            8);
    // As for addi: a contiguous offset on a uniform pointer, or a uniform
    // offset (a row stride, say) on contiguous pointers.
    a.contiguity = std::max(std::min(o.contiguity, p.constancy),
                            std::min(p.contiguity, o.constancy));
    a.divisibility = std::min<int64_t>(
        p.divisibility,
        std::min<int64_t>(o.divisibility * bytes, AxisInfo::kMax));
    a.constancy = std::min(p.constancy, o.constancy);
  }
  info[r] = clampTo(a, t);
}
