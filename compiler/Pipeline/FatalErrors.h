//===- FatalErrors.h - LLVM fatal errors as compile errors ------*- C++ -*-===//
//
// sparsetile runs inside other people's processes, so an LLVM or MLIR fatal
// error (report_fatal_error, which prints and exits) must not end them.
// Inputs are validated before LLVM sees them wherever that is possible
// (resolveTarget, the front end's limits); this is the net under the paths
// that cannot be checked up front. See FatalErrors.cpp for how and why.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_PIPELINE_FATALERRORS_H
#define SPARSETILE_PIPELINE_FATALERRORS_H

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace sparsetile {

/// Runs `body`; if LLVM raises a fatal error inside it on this thread,
/// unwinds back here (skipping `body`'s destructors: what it allocated
/// leaks) and returns false with LLVM's reason. LLVM's out-of-memory error
/// inside it throws std::bad_alloc instead (for `body` or its caller to
/// catch) rather than aborting. Nests and is thread-safe.
bool runRecoveringFatalErrors(llvm::function_ref<void()> body,
                              std::string &reason);

/// Fault injection for the tests of these paths: true when the environment
/// variable SPARSETILE_INJECT_FAULT names `point` ("llvm-fatal",
/// "llvm-error", "verifier", "llvm-bad-alloc", "bad-alloc").
bool faultInjected(const char *point);

} // namespace sparsetile

#endif // SPARSETILE_PIPELINE_FATALERRORS_H
