//===- FuzzFrontend.cpp - libFuzzer target for the front end --------------===//
//
// Feeds arbitrary bytes to the lexer and parser as a .tile file, then prints
// every parsed kernel back (stc --emit=ast) and computes its signature
// (stc --list), as the compiler and the runtime do with user text; after a
// syntax error, the kernels that parsed are printed too. A crash,
// a hang or a sanitizer report is a finding; diagnostics are the expected
// answer to bad input.
//
//===----------------------------------------------------------------------===//

#include "Frontend/AST.h"
#include "Frontend/Diagnostics.h"
#include "Frontend/Parser.h"
#include "Frontend/Signature.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string source(reinterpret_cast<const char *>(data), size);
  sparsetile::Diagnostics diags("fuzz.tile", source);
  sparsetile::ast::Module module;
  if (!sparsetile::parseModule(source, diags, module)) {
    // Every failure must say something, and so must every bad item.
    if (diags.str().empty() || module.badItems.empty())
      __builtin_trap();
    for (const sparsetile::ast::BadItem &b : module.badItems)
      if (b.diagnostics.empty())
        __builtin_trap();
  }
  // The kernels that parsed are usable even when others did not.
  for (const sparsetile::ast::Kernel &k : module.kernels) {
    (void)sparsetile::ast::print(k);
    (void)sparsetile::signatureOf(k, {});
    (void)sparsetile::syntaxErrorsFor(module, k.name);
  }
  return 0;
}
