//===- KernelConstants.h - A kernel's `const` values ---------*- C++ -*-===//
//
// The values a kernel's `const` parameters compile with: the value given
// (stc -D, JIT constants), else the default the source declares, evaluated
// here without MLIR. What the C ABI's st_kernel_constant and Python's
// `Kernel.meta` report.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_KERNELCONSTANTS_H
#define SPARSETILE_KERNELCONSTANTS_H

#include "sparsetile/Compiler.h"

#include <map>
#include <string>
#include <vector>

namespace sparsetile {

/// One `const` parameter of a kernel with the value it compiles with.
struct ConstantValue {
  std::string name;
  /// The declared type (`const B: i32`); for a `const T: dtype` parameter,
  /// the dtype its value names (when known).
  DType dtype = DType::I32;
  bool isType = false; ///< `const T: dtype`.
  /// Whether `value` holds the value. False when the parameter has no
  /// default and none was given, when the given text does not parse as its
  /// type, or when its default is an expression beyond what
  /// kernelConstants evaluates (a function call, a constant array's entry):
  /// MLIRGen still evaluates those when it compiles.
  bool known = false;
  /// The value as DSL text: a decimal integer, "true"/"false", a float that
  /// reads back as the same f32 ("%.9g"), or a dtype name ("bf16").
  std::string value;
};

/// The `const` parameters of kernel `kernelName` (empty: the file's only
/// kernel) in declaration order, each with the value in `given` (text, as
/// JIT constants and stc -D take it), else its default. Defaults are
/// evaluated as MLIRGen does for literals, names of earlier constants and of
/// file-level `const NAME = value;`, unary and binary arithmetic,
/// comparisons and logic, and cdiv/min/max, with integers wrapped to the
/// parameter's width. Returns false and fills `diagnostics` when the source
/// does not parse or has no such kernel.
SPARSETILE_API bool
kernelConstants(const std::string &source, const std::string &filename,
                const std::string &kernelName,
                const std::map<std::string, std::string> &given,
                std::vector<ConstantValue> &constants,
                std::string &diagnostics);

} // namespace sparsetile

#endif // SPARSETILE_KERNELCONSTANTS_H
