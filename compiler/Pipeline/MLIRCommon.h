//===- MLIRCommon.h - Precompiled MLIR/LLVM headers -------------*- C++ -*-===//
//
// The heavy MLIR and LLVM headers every compiler source needs, compiled once
// as a precompiled header (see compiler/CMakeLists.txt). Parsing these takes
// ~35 s per translation unit otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_PIPELINE_MLIRCOMMON_H
#define SPARSETILE_PIPELINE_MLIRCOMMON_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#endif // SPARSETILE_PIPELINE_MLIRCOMMON_H
