//===- ControlFlow.cpp - scf.for and scf.if on per-thread values ----------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Rebuilds scf.for and scf.if with the flattened per-thread
// elements of their tiles as iter_args and results. Carried values keep the
// layout of what flows into them, so a dot accumulator stays in registers in
// the tensor-core layout instead of crossing shared memory every iteration.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

/// Concatenates the per-thread elements of `values`, remembering each one's
/// count so results can be split again.
static Elems flatten(ArrayRef<Elems> parts, SmallVectorImpl<size_t> &sizes) {
  Elems out;
  for (const Elems &p : parts) {
    sizes.push_back(p.size());
    out.append(p.begin(), p.end());
  }
  return out;
}

Elems Distributor::packPairs(const Elems &e) {
  Elems out;
  for (size_t i = 0; i < e.size(); i += 2)
    out.push_back(packVector(b, loc(), {e[i], e[i + 1]}));
  return out;
}

Elems Distributor::unpackPairs(ArrayRef<Value> pairs) {
  Elems out;
  for (Value v : pairs)
    for (int64_t i = 0; i < 2; ++i)
      out.push_back(b.create<LLVM::ExtractElementOp>(loc(), v, i32(i)));
  return out;
}

Elems Distributor::carryIn(ValueRange inits, ValueRange yielded, Carried &c) {
  SmallVector<Elems> parts;
  for (auto [v, y] : llvm::zip(inits, yielded)) {
    const Coords *l = nullptr;
    bool pairs = false;
    if (isa<RankedTensorType>(v.getType())) {
      // tile-assign-layouts converted the initial value to the layout the
      // loop carries (that of what the body yields for it).
      l = &coordsOf(v);
      Elems e = evalAt(v, *l);
      pairs =
          TileTypeConverter::carriedInPairs(elementType(v.getType()), e.size());
      parts.push_back(pairs ? packPairs(e) : e);
    } else {
      parts.push_back(get(v));
    }
    c.layouts.push_back(l);
    c.paired.push_back(pairs);
  }
  return flatten(parts, c.sizes);
}

void Distributor::bindCarried(ValueRange from, ValueRange to,
                              const Carried &c) {
  size_t pos = 0;
  for (auto [i, v] : llvm::enumerate(from)) {
    Elems e;
    for (size_t j = 0; j < c.sizes[i]; ++j)
      e.push_back(to[pos++]);
    dist[v] = c.paired[i] ? unpackPairs(e) : e;
    if (c.layouts[i])
      assigned[v] = c.layouts[i];
  }
}

Elems Distributor::carryOut(ValueRange values, const Carried &c) {
  Elems out;
  for (auto [i, v] : llvm::enumerate(values)) {
    Elems e = c.layouts[i] ? evalAt(v, *c.layouts[i]) : get(v);
    if (c.paired[i])
      e = packPairs(e);
    out.append(e.begin(), e.end());
  }
  return out;
}

LogicalResult Distributor::lowerFor(scf::ForOp op) {
  auto yieldOp = cast<scf::YieldOp>(op.getBody()->getTerminator());
  Carried c;
  Elems flatInits = carryIn(op.getInitArgs(), yieldOp.getOperands(), c);
  auto newFor = b.create<scf::ForOp>(loc(), get(op.getLowerBound())[0],
                                     get(op.getUpperBound())[0],
                                     get(op.getStep())[0], flatInits);
  Block *body = newFor.getBody();
  if (!body->empty())
    body->back().erase();
  dist[op.getInductionVar()] = {newFor.getInductionVar()};
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(body);
    bindCarried(op.getRegionIterArgs(), newFor.getRegionIterArgs(), c);
    auto savedMemo = std::move(memo);
    memo.clear();
    if (failed(lowerBlock(*op.getBody())))
      return failure();
    b.create<scf::YieldOp>(loc(), carryOut(yieldOp.getOperands(), c));
    memo = std::move(savedMemo);
  }
  bindCarried(op.getResults(), newFor.getResults(), c);
  return success();
}

LogicalResult Distributor::lowerIf(scf::IfOp op) {
  SmallVector<Type> types;
  SmallVector<size_t> sizes;
  SmallVector<const Coords *> layouts;
  SmallVector<bool> paired;
  for (auto [i, r] : llvm::enumerate(op.getResults())) {
    const Coords *l = nullptr;
    if (isa<RankedTensorType>(r.getType()) && !(l = coordsFor(r.getType())))
      return op.emitOpError("cannot hold result ")
             << i << " in " << encodingOf(r.getType());
    // Each result crosses the branch as the values its type converts to.
    SmallVector<Type> regs;
    if (failed(converter->convertType(r.getType(), regs)))
      return op.emitOpError("cannot carry result ") << i;
    layouts.push_back(l);
    paired.push_back(l && converter->carriedInPairs(r.getType()));
    sizes.push_back(regs.size());
    types.append(regs.begin(), regs.end());
  }
  auto newIf = b.create<scf::IfOp>(loc(), types, get(op.getCondition())[0],
                                   /*withElse=*/true);
  auto lowerRegion = [&](Region &from, Region &to) -> LogicalResult {
    OpBuilder::InsertionGuard guard(b);
    Block *blk = &to.front();
    if (!blk->empty())
      blk->back().erase();
    b.setInsertionPointToEnd(blk);
    auto savedMemo = std::move(memo);
    memo.clear();
    Elems ys;
    if (!from.empty()) {
      if (failed(lowerBlock(from.front())))
        return failure();
      for (auto [i, v] :
           llvm::enumerate(from.front().getTerminator()->getOperands())) {
        Elems e = layouts[i] ? evalAt(v, *layouts[i]) : get(v);
        if (paired[i])
          e = packPairs(e);
        ys.append(e.begin(), e.end());
      }
    }
    b.create<scf::YieldOp>(loc(), ys);
    memo = std::move(savedMemo);
    return success();
  };
  if (failed(lowerRegion(op.getThenRegion(), newIf.getThenRegion())) ||
      failed(lowerRegion(op.getElseRegion(), newIf.getElseRegion())))
    return failure();
  size_t pos = 0;
  for (auto [i, r] : llvm::enumerate(op.getResults())) {
    Elems e;
    for (size_t j = 0; j < sizes[i]; ++j)
      e.push_back(newIf.getResult(pos++));
    dist[r] = paired[i] ? unpackPairs(e) : e;
    if (layouts[i])
      assigned[r] = layouts[i];
  }
  return success();
}

/// scf.while: tile-persistent's loop over tiles (scalars only: the step and
/// the tile index, and its condition passes on other values than it gets),
/// and the language's `while` and breaking `for` (MLIRGenLoops.cpp), whose
/// condition passes its arguments on unchanged. Tiles are carried as
/// lowerFor carries them: in the layout of what the body yields, 16-bit
/// elements in pairs, the same flattening in both regions.
LogicalResult Distributor::lowerWhile(scf::WhileOp op) {
  bool tiles = llvm::any_of(op.getInits(), [](Value v) {
    return isa<RankedTensorType>(v.getType());
  });
  if (!tiles)
    return lowerScalarWhile(op);
  auto cond = op.getConditionOp();
  auto yieldOp = cast<scf::YieldOp>(op.getAfterBody()->getTerminator());
  if (op.getBefore().getArgumentTypes() != op.getAfter().getArgumentTypes() ||
      !llvm::equal(cond.getArgs(), op.getBeforeBody()->getArguments()))
    return op.emitOpError("carries tiles, so its condition must pass its "
                          "arguments on unchanged");
  Carried c;
  Elems flatInits = carryIn(op.getInits(), yieldOp.getOperands(), c);
  SmallVector<Type> types;
  for (Value v : flatInits)
    types.push_back(v.getType());
  auto newWhile =
      b.create<scf::WhileOp>(loc(), types, flatInits, nullptr, nullptr);
  // Both regions take the carried values in the same flattening.
  auto lowerRegion = [&](Block &from, Block *to) -> LogicalResult {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(to);
    bindCarried(from.getArguments(), to->getArguments(), c);
    memo.clear();
    return lowerBlock(from);
  };
  auto savedMemo = std::move(memo);
  if (failed(lowerRegion(*op.getBeforeBody(), newWhile.getBeforeBody())))
    return failure();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(newWhile.getBeforeBody());
    b.create<scf::ConditionOp>(loc(), get(cond.getCondition())[0],
                               carryOut(cond.getArgs(), c));
  }
  if (failed(lowerRegion(*op.getAfterBody(), newWhile.getAfterBody())))
    return failure();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(newWhile.getAfterBody());
    b.create<scf::YieldOp>(loc(), carryOut(yieldOp.getOperands(), c));
  }
  memo = std::move(savedMemo);
  bindCarried(op.getResults(), newWhile.getResults(), c);
  return success();
}

/// scf.while with scalar operands only (see lowerWhile).
LogicalResult Distributor::lowerScalarWhile(scf::WhileOp op) {
  auto lowered = [&](Type t) -> Type {
    return isa<PointerType>(t) ? LLVM::LLVMPointerType::get(b.getContext(), 1)
                               : t;
  };
  SmallVector<Value> inits;
  SmallVector<Type> afterTypes;
  for (Value v : op.getInits()) {
    if (isa<RankedTensorType>(v.getType()))
      return op.emitOpError("cannot carry tiles through a while loop");
    inits.push_back(get(v)[0]);
  }
  for (Type t : op.getAfter().getArgumentTypes()) {
    if (isa<RankedTensorType>(t))
      return op.emitOpError("cannot carry tiles through a while loop");
    afterTypes.push_back(lowered(t));
  }
  // Creates the blocks: before's arguments typed as `inits`, after's as
  // the results.
  auto newWhile =
      b.create<scf::WhileOp>(loc(), afterTypes, inits, nullptr, nullptr);
  auto lowerRegion = [&](Region &from, Block *to) -> LogicalResult {
    for (auto [arg, l] :
         llvm::zip(from.front().getArguments(), to->getArguments()))
      dist[arg] = {l};
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(to);
    auto savedMemo = std::move(memo);
    memo.clear();
    if (failed(lowerBlock(from.front())))
      return failure();
    Operation *term = from.front().getTerminator();
    SmallVector<Value> args;
    if (auto c = dyn_cast<scf::ConditionOp>(term)) {
      for (Value v : c.getArgs())
        args.push_back(get(v)[0]);
      b.create<scf::ConditionOp>(loc(), get(c.getCondition())[0], args);
    } else {
      for (Value v : term->getOperands())
        args.push_back(get(v)[0]);
      b.create<scf::YieldOp>(loc(), args);
    }
    memo = std::move(savedMemo);
    return success();
  };
  if (failed(lowerRegion(op.getBefore(), newWhile.getBeforeBody())) ||
      failed(lowerRegion(op.getAfter(), newWhile.getAfterBody())))
    return failure();
  for (auto [r, l] : llvm::zip(op.getResults(), newWhile.getResults()))
    dist[r] = {l};
  return success();
}

void Distributor::populateControlFlowPatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerFor);
  p.add(&Distributor::lowerIf);
  p.add(&Distributor::lowerWhile);
}
