//===- DType.cpp - Element types of the DSL -------------------------------===//
//
// Names and sizes of the DSL's element types, shared by the front end, the
// compiler's signature and the runtime's argument checks.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/Compiler.h"

namespace sparsetile {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::I1:
    return "bool";
  case DType::I8:
    return "i8";
  case DType::I16:
    return "i16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  }
  return "?";
}

int dtypeSize(DType t) {
  switch (t) {
  case DType::I1:
  case DType::I8:
    return 1;
  case DType::I16:
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I32:
  case DType::F32:
    return 4;
  case DType::I64:
  case DType::F64:
    return 8;
  }
  return 0;
}

} // namespace sparsetile
