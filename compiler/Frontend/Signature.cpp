//===- Signature.cpp - A kernel's parameters, without MLIR ----------------===//
//
// Implements signatureOf: run-time parameters with their dtypes (a parameter
// typed by a `const T: dtype` takes T's override or default) and constants
// with their defaults as text. Only literal defaults are printed; anything
// else shows as "<expr>", since evaluating it is MLIRGen's job.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Signature.h"
#include "Frontend/Autotune.h"
#include "Frontend/Parser.h"

#include <cstdio>

using namespace sparsetile;

KernelSignature
sparsetile::signatureOf(const ast::Kernel &kernel,
                        const std::map<std::string, std::string> &constants) {
  KernelSignature sig;
  // Type parameters resolve to their override, else their default.
  std::map<std::string, DType> types;
  for (auto &p : kernel.params) {
    if (!p.isTypeParam)
      continue;
    DType dt = DType::F32;
    auto over = constants.find(p.name);
    if (over != constants.end())
      parseDType(over->second, dt);
    else if (p.defaultValue && p.defaultValue->kind == ast::Expr::DTypeRef)
      dt = p.defaultValue->dtype;
    types[p.name] = dt;
  }
  sig.name = kernel.name;
  for (auto &p : kernel.params) {
    if (p.isConst) {
      ConstParam c;
      c.name = p.name;
      c.dtype = p.dtype;
      c.isType = p.isTypeParam;
      if (p.defaultValue) {
        const ast::Expr *d = p.defaultValue.get();
        if (d->kind == ast::Expr::DTypeRef)
          c.defaultValue = dtypeName(d->dtype);
        else if (d->kind == ast::Expr::IntLit)
          c.defaultValue = std::to_string(d->intValue);
        else if (d->kind == ast::Expr::FloatLit) {
          char buf[64];
          snprintf(buf, sizeof buf, "%g", d->floatValue);
          c.defaultValue = buf;
        } else if (d->kind == ast::Expr::BoolLit)
          c.defaultValue = d->intValue ? "true" : "false";
        else
          c.defaultValue = "<expr>";
      }
      sig.constants.push_back(c);
      continue;
    }
    KernelParam kp;
    kp.name = p.name;
    kp.isPointer = p.isPointer;
    kp.isDescriptor = p.isDesc;
    kp.dtype = p.typeRef.empty() ? p.dtype : types[p.typeRef];
    sig.params.push_back(kp);
  }
  if (kernel.autotune) {
    sig.hasAutotune = true;
    sig.autotune = autotuneDecl(kernel);
  }
  return sig;
}
