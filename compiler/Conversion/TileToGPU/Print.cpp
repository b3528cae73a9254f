//===- Print.cpp - device_print and device_assert ------------------------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Lowers tile.print to gpu.printf (vprintf after
// convert-gpu-to-nvvm): one line per element, from the thread that owns it
// in the canonical layout (replicas stay silent, as for stores), giving the
// program id, the element's coordinates, the prefix and the value:
//   pid (0, 1, 0) idx (3, 7) x = 0.500000
// and tile.assert as clang lowers CUDA's assert: a thread that owns a false
// element calls `__assertfail(message, file, line, function, 1)`, which the
// CUDA driver provides as it does vprintf (no library is linked): it prints
//   file.tile:12: kernel: block: [3,0,0], thread: [64,0,0] Assertion `m` failed.
// and stops the kernel with cudaErrorAssert.
//
//===----------------------------------------------------------------------===//

#include "Conversion/PerfRemarks.h"
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

/// Whether this thread reports a value of `shape`: the owner of an element
/// (thread 0 for a scalar); replicas stay silent. `bound` is the constant
/// 0 for a scalar, else the layout's thread count.
static Value ownsElements(OpBuilder &b, Location l, Value tid,
                          ArrayRef<int64_t> shape, Value bound) {
  return b.create<arith::CmpIOp>(l,
                                 shape.empty() ? arith::CmpIPredicate::eq
                                               : arith::CmpIPredicate::ult,
                                 tid, bound);
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
    Value owner = ownsElements(b, loc(), tid, shape,
                               i32(shape.empty() ? 0 : l.threads));
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

/// A NUL-terminated constant string in the GPU module, by address.
static Value globalString(OpBuilder &b, gpu::GPUModuleOp module, Location l,
                          StringRef text) {
  std::string bytes = text.str() + '\0';
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
  std::string name;
  for (int i = 0;; ++i) { // One global per text.
    name = "__sparsetile_str" + std::to_string(i);
    auto g = module.lookupSymbol<LLVM::GlobalOp>(name);
    if (!g)
      break;
    if (auto v = dyn_cast_or_null<StringAttr>(g.getValueOrNull());
        v && v.getValue() == bytes)
      return b.create<LLVM::AddressOfOp>(l, g);
  }
  OpBuilder mb(module.getContext());
  mb.setInsertionPointToStart(module.getBody());
  auto g = mb.create<LLVM::GlobalOp>(l, type, /*isConstant=*/true,
                                     LLVM::Linkage::Internal, name,
                                     mb.getStringAttr(bytes));
  return b.create<LLVM::AddressOfOp>(l, g);
}

LogicalResult Distributor::lowerAssert(AssertOp op) {
  Value cond = op.getCondition();
  auto shape = shapeOf(cond.getType());
  Layout l = layoutOf(shape);
  // 1. Whether this thread owns a false element.
  Value failed = b.create<arith::ConstantIntOp>(loc(), 0, 1);
  Value one = b.create<arith::ConstantIntOp>(loc(), 1, 1);
  for (Value v : canonicalElems(cond))
    failed = b.create<arith::OrIOp>(
        loc(), failed, b.create<arith::XOrIOp>(loc(), v, one));
  failed = b.create<arith::AndIOp>(
      loc(), failed,
      ownsElements(b, loc(), tid, shape, i32(shape.empty() ? 0 : l.threads)));
  // 2. If so, __assertfail(message, file, line, function, sizeof(char)).
  auto ifOp = b.create<scf::IfOp>(loc(), failed, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  std::string file = "<unknown>";
  int64_t line = 0;
  if (auto fl = dslLocation(op.getLoc())) {
    file = fl.getFilename().str();
    line = fl.getLine();
  }
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  auto fnType = LLVM::LLVMFunctionType::get(
      LLVM::LLVMVoidType::get(b.getContext()),
      {ptr, ptr, b.getI32Type(), ptr, b.getI64Type()});
  auto fn = gpuModule.lookupSymbol<LLVM::LLVMFuncOp>("__assertfail");
  if (!fn) {
    OpBuilder mb(gpuModule.getContext());
    mb.setInsertionPointToStart(gpuModule.getBody());
    fn = mb.create<LLVM::LLVMFuncOp>(gpuModule.getLoc(), "__assertfail",
                                     fnType);
  }
  b.create<LLVM::CallOp>(
      loc(), fn,
      ValueRange{globalString(b, gpuModule, loc(), op.getMessage()),
                 globalString(b, gpuModule, loc(), file),
                 b.create<arith::ConstantIntOp>(loc(), line, 32),
                 globalString(b, gpuModule, loc(), src.getName()),
                 b.create<arith::ConstantIntOp>(loc(), 1, 64)});
  return success();
}

void Distributor::populatePrintPatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerPrint);
  p.add(&Distributor::lowerAssert);
}
