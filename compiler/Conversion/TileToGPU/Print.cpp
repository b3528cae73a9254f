//===- Print.cpp - device_print ------------------------------------------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Lowers tile.print to gpu.printf (vprintf after
// convert-gpu-to-nvvm): one line per element, from the thread that owns it
// in the canonical layout (replicas stay silent, as for stores), giving the
// program id, the element's coordinates, the prefix and the value:
//   pid (0, 1, 0) idx (3, 7) x = 0.500000
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

/// `x` as a printf argument and its conversion: floats as double (C's
/// variadic promotion), narrow integers widened to int.
static std::pair<Value, const char *> printable(OpBuilder &b, Location l,
                                                Value x) {
  Type t = x.getType();
  if (isa<FloatType>(t))
    return {t.isF64() ? x : b.create<arith::ExtFOp>(l, b.getF64Type(), x),
            "%f"};
  if (t.isInteger(64))
    return {x, "%lld"};
  if (t.getIntOrFloatBitWidth() < 32)
    x = t.isInteger(1) ? Value(b.create<arith::ExtUIOp>(l, b.getI32Type(), x))
                       : Value(b.create<arith::ExtSIOp>(l, b.getI32Type(), x));
  return {x, "%d"};
}

LogicalResult Distributor::lowerPrint(PrintOp op) {
  SmallVector<Value> pid;
  for (auto d : {gpu::Dimension::x, gpu::Dimension::y, gpu::Dimension::z})
    pid.push_back(b.create<arith::IndexCastOp>(
        loc(), b.getI32Type(), b.create<gpu::BlockIdOp>(loc(), d)));
  std::string prefix = op.getPrefix().str();
  if (!prefix.empty())
    prefix += " ";
  for (Value v : op.getValues()) {
    auto shape = shapeOf(v.getType());
    Layout l = layoutOf(shape);
    Elems vals = canonicalElems(v);
    const Coords *at = shape.empty() ? nullptr : &canonical(shape);
    // Only the owner of an element prints it (thread 0 for a scalar).
    Value owner = shape.empty() ? b.create<arith::CmpIOp>(
                                      loc(), arith::CmpIPredicate::eq, tid,
                                      i32(0))
                                : b.create<arith::CmpIOp>(
                                      loc(), arith::CmpIPredicate::ult, tid,
                                      i32(l.threads));
    auto ifOp = b.create<scf::IfOp>(loc(), owner, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    for (size_t s = 0; s < vals.size(); ++s) {
      std::string format = "pid (%d, %d, %d) idx (";
      SmallVector<Value> args(pid);
      for (size_t d = 0; at && d < shape.size(); ++d) {
        format += d ? ", %d" : "%d";
        args.push_back(at->at[s][d]);
      }
      auto [x, conv] = printable(b, loc(), vals[s]);
      format += ") " + prefix + conv + "\n";
      args.push_back(x);
      b.create<gpu::PrintfOp>(loc(), b.getStringAttr(format), args);
    }
  }
  return success();
}
