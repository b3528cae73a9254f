//===- FatalErrors.cpp - LLVM fatal errors as compile errors ---------------===//
//
// Implements runRecoveringFatalErrors(). LLVM's report_fatal_error calls the
// installed fatal-error handler and then exits the process; the handler must
// not return into LLVM. Ours jumps (longjmp) back to the innermost
// runRecoveringFatalErrors() of the calling thread, which turns the reason
// into a compile error.
//
// Why this and not llvm::CrashRecoveryContext: CrashRecoveryContext::Enable()
// installs process-wide handlers for SIGSEGV, SIGABRT, SIGFPE, ... and would
// then "recover" from real memory corruption in the middle of someone's
// training process. A fatal-error handler only sees LLVM's own, orderly
// report_fatal_error calls, and the handler belongs to the copy of LLVM
// linked statically (and hidden) into libsparsetile_compiler, so no other
// LLVM in the process (Triton's, say) is affected. Signals stay the host's.
//
// What it costs: the jump skips the destructors of everything the failed
// compile built (MLIR and LLVM contexts, modules): a fatal error leaks that
// memory. A lock LLVM held while failing would stay held; LLVM's fatal paths
// in code generation hold none of ours (each compile has its own contexts).
// Nothing jumps when no runRecoveringFatalErrors() is active on the thread:
// LLVM then exits as it always did.
//
// Out of memory is the other way LLVM ends the process: report_bad_alloc_error
// (safe_malloc, the bump allocators) prints "LLVM ERROR: out of memory" and
// aborts. Inside a compile our bad-alloc handler throws std::bad_alloc
// instead, as LLVM's documentation offers, and compile() catches it with
// the std::bad_alloc of any other allocation. Throwing rather than jumping
// runs the destructors of the compile's contexts on the way out: an
// out-of-memory compile gives its memory back instead of leaking it.
//
//===----------------------------------------------------------------------===//

#include "Pipeline/FatalErrors.h"

#include "llvm/Support/ErrorHandling.h"

#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include <unistd.h>

namespace {
struct Recovery {
  std::jmp_buf buf;
  std::string reason;
};
/// The innermost runRecoveringFatalErrors() on this thread, or null.
thread_local Recovery *current = nullptr;

void onFatalError(void *, const char *reason, bool) {
  Recovery *r = current;
  if (!r)
    return; // Not ours to handle: LLVM prints and exits as before.
  r->reason = reason ? reason : "unknown";
  std::longjmp(r->buf, 1);
}

void onBadAlloc(void *, const char *, bool) {
  if (current)
    throw std::bad_alloc();
  // Not in a compile: what LLVM does without a handler (it must not return).
  static const char msg[] = "LLVM ERROR: out of memory\n";
  ssize_t ignored = ::write(2, msg, sizeof msg - 1);
  (void)ignored;
  std::abort();
}

/// Restores the outer Recovery however runRecoveringFatalErrors() is left:
/// normally, by the jump, or by an exception (std::bad_alloc) from `body`.
struct Restore {
  Recovery *outer;
  ~Restore() { current = outer; }
};
} // namespace

bool sparsetile::runRecoveringFatalErrors(llvm::function_ref<void()> body,
                                          std::string &reason) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::install_fatal_error_handler(onFatalError);
    llvm::install_bad_alloc_error_handler(onBadAlloc);
  });
  Recovery recovery;
  Restore restore{current};
  current = &recovery;
  if (setjmp(recovery.buf) != 0) {
    reason = recovery.reason;
    return false;
  }
  body();
  return true;
}

bool sparsetile::faultInjected(const char *point) {
  const char *v = std::getenv("SPARSETILE_INJECT_FAULT");
  return v && std::strcmp(v, point) == 0;
}
