//===- Error.h - The runtime's exception type -------------------*- C++ -*-===//
//
// Every failure in the runtime (no driver, a CUDA error, a bad launch
// argument, a compile error) is reported by throwing `sparsetile::rt::Error`.
// The runtime never aborts the process: callers such as tests and benches
// decide what a failure means.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_ERROR_H
#define SPARSETILE_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>

namespace sparsetile {
namespace rt {

/// The one exception type the runtime throws. The message says what was being
/// done and why it failed (CUresult name, compile log, parameter name, ...).
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

/// No usable GPU, or a CUDA driver call failed (C ABI: ST_ERROR_CUDA).
class CudaError : public Error {
public:
  using Error::Error;
};

/// DSL source that does not parse or compile (C ABI: ST_ERROR_COMPILE); the
/// message carries the compiler's file:line:col diagnostics.
class CompileError : public Error {
public:
  using Error::Error;
};

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_ERROR_H
