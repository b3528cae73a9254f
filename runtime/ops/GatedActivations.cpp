//===- GatedActivations.cpp - Fused SwiGLU / GEGLU launchers --------------===//
//
// Checks a GluProblem, picks the kernel specialization (dtype, activation,
// layout and interleave width are compile-time constants of the .tile
// kernels) and launches it through the JIT. The kernel source is embedded in
// the library at build time, so no file has to be found at run time.
//
// Unless the caller fixes blockColumns or warps, the tiling is autotuned per
// (M, F) over a few candidates, today's fixed choice first (so
// SPARSETILE_AUTOTUNE=0 keeps it).
//
//===----------------------------------------------------------------------===//

#include "sparsetile/ops/GatedActivations.h"
#include "OpsCommon.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"

#include <string>
#include <vector>

namespace sparsetile::ops {
namespace {

/// Columns per program and warps per program. Large problems take 4096
/// columns over 8 warps: 1% faster than 1024 over 4 at (16384, 11008), equal
/// at (4096, 4096); tiny ones (one row) are latency-bound and finish sooner
/// with more, shorter programs (bench/NOTES.md, gated v2 and v3). The
/// backward keeps 1024 over 4 warps (not swept).
struct Tiling {
  int64_t block;
  int warps;
};
Tiling forwardTiling(int64_t M, int64_t F) {
  return M * F >= (int64_t(1) << 26) ? Tiling{4096, 8} : Tiling{1024, 4};
}
constexpr Tiling kBackwardTiling{1024, 4};
/// What autotuning tries after the fixed choice: wider programs for long
/// rows, narrower ones for short (BLOCK stays >= the widest interleave).
constexpr Tiling kCandidates[] = {{1024, 4}, {2048, 4}, {2048, 8}, {4096, 8}};

constexpr int64_t kMaxBlock = 1024; // Interleave widths stay within this.

const rt::KernelSource &source() {
  // Looked up once (every launch calls this), not under the map's lock.
  static const rt::KernelSource &src =
      detail::embeddedSource("gated_activations.tile");
  return src;
}

[[noreturn]] void fail(const std::string &what) { detail::fail("glu", what); }

/// The caller's tiling where given, else `automatic`.
Tiling chooseTiling(const GluProblem &p, Tiling automatic) {
  Tiling t = automatic;
  if (p.blockColumns) {
    int64_t b = p.blockColumns;
    if (b < 256 || b > 8192 || (b & (b - 1)))
      fail("blockColumns = " + std::to_string(b) +
           " must be a power of two from 256 to 8192");
    t.block = b;
  }
  if (p.warps) {
    if (p.warps < 1 || p.warps > 32 || (p.warps & (p.warps - 1)))
      fail("warps = " + std::to_string(p.warps) +
           " must be a power of two from 1 to 32");
    t.warps = p.warps;
  }
  return t;
}

void checkStride(const char *name, int64_t stride, int64_t minimum) {
  if (stride < minimum)
    fail(std::string(name) + " = " + std::to_string(stride) +
         " is smaller than the row width " + std::to_string(minimum));
  if (stride >= detail::kI32Limit)
    fail(std::string(name) + " = " + std::to_string(stride) +
         " does not fit the kernels' i32 strides");
}

void checkPointer(const char *name, rt::DevicePtr p) {
  detail::checkPointer("glu", name, p);
}

/// Validates the problem and returns the kernel constants.
rt::Constants constantsFor(const GluProblem &p, Tiling t) {
  if (p.dtype != DType::BF16 && p.dtype != DType::F16)
    fail(std::string("dtype must be bf16 or f16, got ") + dtypeName(p.dtype));
  if (p.M < 0 || p.M >= detail::kI32Limit)
    fail("M = " + std::to_string(p.M) + " out of range");
  if (p.F < 1 || p.F >= (int64_t(1) << 30))
    fail("F = " + std::to_string(p.F) + " out of range");
  int64_t w = p.interleaveWidth;
  if (p.layout == GluLayout::Interleaved &&
      (w < 8 || w > kMaxBlock || (w & (w - 1)) || p.F % w))
    fail("interleaveWidth = " + std::to_string(w) +
         " must be a power of two in [8, 1024] dividing F = " +
         std::to_string(p.F));
  return {{"T", dtypeName(p.dtype)},
          {"ACT", std::to_string(int(p.activation))},
          {"LAYOUT", std::to_string(int(p.layout))},
          {"W", std::to_string(p.layout == GluLayout::Interleaved ? w : 64)},
          {"BLOCK", std::to_string(t.block)}};
}

rt::Dim3 gridFor(const GluProblem &p, int64_t block) {
  int64_t programs = p.M * ((p.F + block - 1) / block);
  if (programs >= detail::kI32Limit)
    fail("M * ceil(F / " + std::to_string(block) +
         ") = " + std::to_string(programs) + " programs exceed the grid limit");
  return rt::Dim3(unsigned(programs));
}

/// Launches `kernel` with the caller's tiling if it gave one, else the
/// autotuned one (`fixed` first among the candidates).
void launchGlu(const char *kernel, const GluProblem &p, Tiling fixed,
               const std::vector<rt::Arg> &args, const char *output,
               CUstream_st *stream) {
  Tiling t = chooseTiling(p, fixed);
  rt::Constants consts = constantsFor(p, t);
  if (p.blockColumns || p.warps) {
    rt::JITOptions o;
    o.numWarps = t.warps;
    rt::Kernel &k = rt::JIT::global().get(source(), kernel, consts, o);
    k.launch(
        rt::LaunchConfig(gridFor(p, t.block), rt::Dim3(0, 1, 1), 0, stream),
        args);
    return;
  }
  consts.erase("BLOCK");
  std::vector<rt::TuneConfig> configs;
  for (Tiling c :
       {fixed, kCandidates[0], kCandidates[1], kCandidates[2], kCandidates[3]})
    configs.push_back(
        rt::TuneConfig{{{"BLOCK", std::to_string(c.block)}}, c.warps});
  rt::LaunchContext ctx;
  ctx.key = "M=" + std::to_string(p.M) + ",F=" + std::to_string(p.F);
  ctx.grid = [&p](const rt::Constants &c, const rt::LaunchArgs &) {
    return gridFor(p, detail::constantOf(c, "BLOCK"));
  };
  detail::tunedKernel(source(), kernel, consts, {},
                      detail::uniqueConfigs(configs), {output})
      .launch(args, stream, &ctx);
}

} // namespace

void gluForward(const GluProblem &p, rt::DevicePtr h, int64_t strideH,
                rt::DevicePtr y, int64_t strideY, CUstream_st *stream) {
  constantsFor(p, chooseTiling(p, forwardTiling(p.M, p.F))); // Checks p.
  checkStride("strideH", strideH, 2 * p.F);
  checkStride("strideY", strideY, p.F);
  checkPointer("h", h);
  checkPointer("y", y);
  if (p.M == 0)
    return;
  launchGlu("glu_fwd", p, forwardTiling(p.M, p.F),
            {rt::Arg::ptr(h, p.dtype), rt::Arg::ptr(y, p.dtype),
             rt::Arg::i32(int32_t(p.F)), rt::Arg::i32(int32_t(strideH)),
             rt::Arg::i32(int32_t(strideY))},
            "y", stream);
}

void gluBackward(const GluProblem &p, rt::DevicePtr h, int64_t strideH,
                 rt::DevicePtr dy, int64_t strideDy, rt::DevicePtr dh,
                 int64_t strideDh, CUstream_st *stream) {
  constantsFor(p, chooseTiling(p, kBackwardTiling)); // Checks p.
  checkStride("strideH", strideH, 2 * p.F);
  checkStride("strideDy", strideDy, p.F);
  checkStride("strideDh", strideDh, 2 * p.F);
  checkPointer("h", h);
  checkPointer("dy", dy);
  checkPointer("dh", dh);
  if (p.M == 0)
    return;
  launchGlu("glu_bwd", p, kBackwardTiling,
            {rt::Arg::ptr(h, p.dtype), rt::Arg::ptr(dy, p.dtype),
             rt::Arg::ptr(dh, p.dtype), rt::Arg::i32(int32_t(p.F)),
             rt::Arg::i32(int32_t(strideH)), rt::Arg::i32(int32_t(strideDy)),
             rt::Arg::i32(int32_t(strideDh))},
            "dh", stream);
}

} // namespace sparsetile::ops
