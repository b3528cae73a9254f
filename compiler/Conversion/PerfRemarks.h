//===- PerfRemarks.h - "This op took a slow path" remarks -------*- C++ -*-===//
//
// Passes that fall back to a slower lowering than the op could have had
// (scalar global accesses, mma.sync instead of the TMA/wgmma ring) say so
// with an MLIR remark on the op, tagged with its kind:
//
//   remark: [scalar-access] ...reason... ; ...fix...
//
// compile() (Pipeline.cpp) collects them into CompileResult::remarks, with
// the op's DSL location; tile-opt prints them like any remark. The kinds
// and the rule for each are in Language.md, "Performance remarks".
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_CONVERSION_PERFREMARKS_H
#define SPARSETILE_CONVERSION_PERFREMARKS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace sparsetile {

/// Emits the remark "[kind] message" at `op`.
inline void emitPerfRemark(mlir::Operation *op, llvm::StringRef kind,
                           const llvm::Twine &message) {
  op->emitRemark() << "[" << kind << "] " << message.str();
}

/// The file:line:col a location names, looking through names, fused
/// locations (CSE merges ops) and call sites; null if there is none.
inline mlir::FileLineColLoc dslLocation(mlir::Location l) {
  if (auto f = llvm::dyn_cast<mlir::FileLineColLoc>(l))
    return f;
  if (auto n = llvm::dyn_cast<mlir::NameLoc>(l))
    return dslLocation(n.getChildLoc());
  if (auto c = llvm::dyn_cast<mlir::CallSiteLoc>(l))
    return dslLocation(c.getCallee());
  if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(l))
    for (mlir::Location sub : fused.getLocations())
      if (auto f = dslLocation(sub))
        return f;
  return {};
}

/// Splits a remark's text back into kind and message; false for remarks
/// that are not performance remarks.
inline bool parsePerfRemark(llvm::StringRef text, std::string &kind,
                            std::string &message) {
  if (!text.consume_front("["))
    return false;
  size_t end = text.find("] ");
  if (end == llvm::StringRef::npos || end == 0)
    return false;
  kind = text.take_front(end).str();
  message = text.drop_front(end + 2).str();
  return true;
}

} // namespace sparsetile

#endif // SPARSETILE_CONVERSION_PERFREMARKS_H
