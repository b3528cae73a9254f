//===- GatedActivations.h - Fused SwiGLU / GEGLU ----------------*- C++ -*-===//
//
// Launchers for the fused gated-activation kernels in
// dsl_examples/gated_activations.tile. A transformer FFN computes
// h = x W1^T of shape [M, 2F]; these compute y = act(g) * u from its halves g
// and u in one pass, and the backward dh = [dy u act'(g), dy act(g)].
// Kernels are JIT-compiled on first use and cached (sparsetile::rt::JIT).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_OPS_GATEDACTIVATIONS_H
#define SPARSETILE_OPS_GATEDACTIVATIONS_H

#include "sparsetile/Compiler.h"
#include "sparsetile/runtime/Driver.h"

#include <cstdint>

struct CUstream_st;

namespace sparsetile::ops {

enum class Activation {
  SiLU = 0,     ///< SwiGLU
  GELU = 1,     ///< GEGLU, erf form
  GELUTanh = 2, ///< GEGLU, tanh approximation
};

enum class GluLayout {
  /// g = h[:, :F], u = h[:, F:].
  Halves = 0,
  /// h's rows hold g and u in alternating blocks of `interleaveWidth`
  /// columns: [g0..gW-1, u0..uW-1, gW.., ...]. W1's rows can be ordered so,
  /// letting g and u of one output column share cache lines.
  Interleaved = 1,
};

/// The shape and kind of one gated activation. Element strides are per row
/// and may exceed the row width (views).
struct GluProblem {
  DType dtype = DType::BF16; ///< BF16 or F16; math is f32.
  int64_t M = 0;             ///< Rows (tokens).
  int64_t F = 0;             ///< Output width; h has 2F columns.
  Activation activation = Activation::SiLU;
  GluLayout layout = GluLayout::Halves;
  int64_t interleaveWidth = 64; ///< Power of two >= 8 dividing F.
  /// Tuning: columns per program (a power of two from 256 to 8192) and warps
  /// per program. Setting either fixes the tiling; both 0 autotune it per
  /// (M, F) (runtime/Autotune.h; SPARSETILE_AUTOTUNE=0 takes the shape's
  /// default).
  int64_t blockColumns = 0;
  int warps = 0;
};

/// y[M, F] = act(g) * u. Throws rt::Error on a bad shape, dtype, stride or
/// pointer; nothing is launched then.
void gluForward(const GluProblem &p, rt::DevicePtr h, int64_t strideH,
                rt::DevicePtr y, int64_t strideY, CUstream_st *stream = nullptr);

/// dh[M, 2F] (in h's layout) = [dy * u * act'(g), dy * act(g)].
void gluBackward(const GluProblem &p, rt::DevicePtr h, int64_t strideH,
                 rt::DevicePtr dy, int64_t strideDy, rt::DevicePtr dh,
                 int64_t strideDh, CUstream_st *stream = nullptr);

} // namespace sparsetile::ops

#endif // SPARSETILE_OPS_GATEDACTIVATIONS_H
