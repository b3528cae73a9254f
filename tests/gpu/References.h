//===- References.h - Independent CUDA C++ reference kernels ----*- C++ -*-===//
//
// Reference implementations of the DSL examples, written directly in CUDA C++
// and compiled with NVRTC (JIT::getCuda), so the tile compiler's output is
// checked against code that shares nothing with it but the math. They need
// no headers: bf16 is handled as raw 16-bit patterns (round to nearest even,
// like __float2bfloat16_rn), so NVRTC needs no include path.
//
// One thread per output element; launch with a 1-D block of kRefBlock
// threads:
//   ref_vector_add:  grid ceil(n / kRefBlock)
//   ref_swiglu_fwd:  grid (ceil(F / kRefBlock), M)
//   ref_softmax:     grid rows, one thread per row (slow, for cross-checks)
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TESTS_GPU_REFERENCES_H
#define SPARSETILE_TESTS_GPU_REFERENCES_H

namespace sparsetile {
namespace testing {

constexpr unsigned kRefBlock = 256;

inline const char *kRefVectorAdd = R"CUDA(
extern "C" __global__ void ref_vector_add(const float *x, const float *y,
                                          float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = x[i] + y[i];
}
)CUDA";

inline const char *kRefSwigluFwd = R"CUDA(
__device__ __forceinline__ float bf16_to_f32(unsigned short b) {
  return __uint_as_float(((unsigned)b) << 16);
}
__device__ __forceinline__ unsigned short f32_to_bf16_rn(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0; // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
// y[row, c] = silu(h[row, c]) * h[row, F + c], math in f32.
extern "C" __global__ void ref_swiglu_fwd(const unsigned short *h,
                                          unsigned short *y, int F,
                                          int stride_h, int stride_y) {
  int row = blockIdx.y;
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= F)
    return;
  const unsigned short *hrow = h + (long long)row * stride_h;
  float g = bf16_to_f32(hrow[c]);
  float u = bf16_to_f32(hrow[F + c]);
  float silu = g / (1.0f + expf(-g));
  y[(long long)row * stride_y + c] = f32_to_bf16_rn(silu * u);
}
)CUDA";

inline const char *kRefSoftmax = R"CUDA(
// One thread per row, in double: a slow but simple cross-check.
extern "C" __global__ void ref_softmax(const float *x, float *out, int n_cols,
                                       int stride, int rows) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows)
    return;
  const float *xr = x + (long long)row * stride;
  double m = -1.0 / 0.0;
  for (int c = 0; c < n_cols; ++c)
    m = fmax(m, (double)xr[c]);
  double s = 0.0;
  for (int c = 0; c < n_cols; ++c)
    s += exp((double)xr[c] - m);
  for (int c = 0; c < n_cols; ++c)
    out[(long long)row * stride + c] = (float)(exp((double)xr[c] - m) / s);
}
)CUDA";

} // namespace testing
} // namespace sparsetile

#endif // SPARSETILE_TESTS_GPU_REFERENCES_H
