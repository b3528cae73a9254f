/*===- sparsetile.h - The C ABI of sparsetile ---------------------*- C -*-===*
 *
 * Everything a foreign-language binding needs (the Python package in
 * python/sparsetile uses it through ctypes): compile and cache kernels from
 * DSL text, read every stage of the pipeline and the cubin, launch with typed
 * arguments on a given stream, and call every op of runtime/ops.
 *
 * Conventions:
 *  - Every function returns an st_status; ST_OK is 0. On failure,
 *    st_last_error() returns the message (thread-local, valid until the next
 *    call on that thread). No C++ exception crosses this boundary.
 *  - Kernel handles (st_kernel) belong to the process-wide JIT and stay valid
 *    until the process exits; they are never freed.
 *  - Strings and buffers the library returns through `char **` are malloc'd;
 *    release them with st_free().
 *  - Device pointers are CUdeviceptr values (uint64_t); streams are CUstream
 *    (void *; NULL is the legacy default stream).
 *  - Dtype codes are those of st_dtype (sparsetile::DType's order).
 *
 * The shared library libsparsetile.so (SONAME libsparsetile.so.MAJOR) holds
 * the runtime and the ops and loads the compiler from
 * libsparsetile_compiler.so.MAJOR beside it. It needs no GPU to load or to
 * compile to PTX.
 *
 *===----------------------------------------------------------------------===*/

#ifndef SPARSETILE_SPARSETILE_H
#define SPARSETILE_SPARSETILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ST_API __attribute__((visibility("default")))

/* The version of this ABI; bumped when a signature or struct changes. */
#define ST_ABI_VERSION 2

typedef enum st_status {
  ST_OK = 0,
  ST_ERROR_INVALID_ARGUMENT = 1, /* bad shape, dtype, pointer, option, ... */
  ST_ERROR_COMPILE = 2,          /* the DSL did not compile; see the message */
  ST_ERROR_CUDA = 3,             /* no GPU, driver or launch failure */
  ST_ERROR_INTERNAL = 4,         /* anything else */
} st_status;

typedef enum st_dtype {
  ST_I1 = 0, ST_I8, ST_I16, ST_I32, ST_I64, ST_F16, ST_BF16, ST_F32, ST_F64,
  ST_U8, ST_U16, ST_U32, ST_U64,
  ST_F8E4M3, ST_F8E5M2, /* fp8 (torch.float8_e4m3fn, torch.float8_e5m2): pointers only */
} st_dtype;

ST_API int st_abi_version(void);
ST_API const char *st_version(void);
/* The message of the last failed call on this thread ("" if none). */
ST_API const char *st_last_error(void);
ST_API void st_free(void *p);
/* Whether a usable GPU is present; *why says why not (static string). */
ST_API int st_gpu_available(const char **why);

/* Code-generation options; zero-initialize for the defaults. */
/* Every call that takes options checks their ranges first
 * (ST_ERROR_INVALID_ARGUMENT naming the field). */
typedef struct st_options {
  const char *arch; /* NULL or "": the current GPU's */
  int ptx_version;  /* 0: the arch's default; else major*10+minor, <= 999 */
  int num_warps;    /* 0: the kernel's @num_warps; at most 1024 */
  int num_stages;   /* 0: as many as fit; else 1 to 8 */
  int no_specialize; /* 1: no divisibility variants; 0 or 1 */
  int debug;        /* 1: device_assert compiled in (as SPARSETILE_DEBUG=1
                       does for every kernel); 0 or 1. ABI version 2 */
} st_options;

/*--- Kernels -------------------------------------------------------------*/

typedef struct st_kernel st_kernel;

/* The kernel `name` (NULL or "": the file's only one) of DSL `source`, with
 * `num_constants` values for its `const` parameters. Parse errors are
 * reported here (ST_ERROR_COMPILE, file:line:col with a caret); variants are
 * compiled at their first launch, or loaded from the cache. */
ST_API st_status st_kernel_get(const char *source, const char *filename,
                               const char *name, const char *const *const_names,
                               const char *const *const_values,
                               int num_constants, const st_options *options,
                               st_kernel **out);

ST_API st_status st_kernel_name(st_kernel *k, const char **name);
ST_API st_status st_kernel_num_params(st_kernel *k, int *count);
/* Parameter `i`: name, whether it is a pointer or a `desc<T>` tensor, and its
 * dtype (the pointee's for pointers and tensors). */
ST_API st_status st_kernel_param(st_kernel *k, int i, const char **name,
                                 int *is_pointer, int *is_descriptor,
                                 int *dtype);
/* The kernel's `const` parameters (Language.md), in declaration order. */
ST_API st_status st_kernel_num_constants(st_kernel *k, int *count);
/* Constant `i`: its name; its st_dtype (`const B: i32`: ST_I32; `const F:
 * bool`: ST_I1; for `const T: dtype`, *is_type is 1 and *dtype is the dtype
 * its value names, -1 when unknown); and its value as text, owned by the
 * library: the value given to st_kernel_get, else the default as the
 * compiler evaluates it (a decimal integer, "true"/"false", a float that
 * reads back as the same f32, or a dtype name such as "bf16"). *value is
 * NULL when there is no default and none was given, or the default is an
 * expression evaluated only while compiling (a function call, an array
 * entry). Any out pointer may be NULL. */
ST_API st_status st_kernel_constant(st_kernel *k, int i, const char **name,
                                    int *dtype, int *is_type,
                                    const char **value);

typedef enum st_arg_kind {
  ST_ARG_SCALAR = 0,  /* `bits` holds the value, little-endian */
  ST_ARG_POINTER = 1, /* `bits` is a device address; `dtype` its pointee */
  ST_ARG_TENSOR2D = 2 /* a `desc<T>` argument: rows x cols, row stride ld */
} st_arg_kind;

typedef struct st_arg {
  int kind;  /* st_arg_kind */
  int dtype; /* st_dtype; -1 for an untyped pointer */
  uint64_t bits;
  int64_t rows, cols, ld; /* ST_ARG_TENSOR2D only */
} st_arg;

/* Checks the arguments against the signature (nothing is launched when one
 * is wrong), then launches asynchronously on `stream`. block[0] == 0 takes
 * the kernel's own block size. num_args must be the kernel's parameter
 * count (st_kernel_num_params): it is checked before `args` is read. */
ST_API st_status st_kernel_launch(st_kernel *k, const unsigned grid[3],
                                  const unsigned block[3],
                                  unsigned dynamic_shared_bytes, void *stream,
                                  const st_arg *args, int num_args);

/*--- Autotuned kernels (Language.md, "Autotuning") -----------------------*/

typedef struct st_autotuned st_autotuned;

/* The autotuned form of a kernel that declares `@autotune(...)`, with the
 * same arguments as st_kernel_get (the constants and options are the base
 * every configuration overrides); *out is NULL when it declares none. */
ST_API st_status st_autotuned_get(const char *source, const char *filename,
                                  const char *name,
                                  const char *const *const_names,
                                  const char *const *const_values,
                                  int num_constants, const st_options *options,
                                  st_autotuned **out);

/* Launches the configuration chosen for the arguments' key with the grid
 * the kernel declares. A new key first compiles the candidates and times
 * them on scratch copies of the outputs (or reads the winner stored in the
 * cache directory); SPARSETILE_AUTOTUNE=0 takes the first configuration. */
ST_API st_status st_autotuned_launch(st_autotuned *k, void *stream,
                                     const st_arg *args, int num_args);

/* The configuration chosen for these arguments (tuning now if the key is
 * new): its index in the declaration and its text ("BM=128 num_warps=8"),
 * valid until the next call on this thread. */
ST_API st_status st_autotuned_choice(st_autotuned *k, void *stream,
                                     const st_arg *args, int num_args,
                                     int *index, const char **config);

/* Launches configuration `index` (st_autotuned_choice's) with the caller's
 * grid instead of the declared one: Triton's `kernel[grid](...)` on an
 * autotuned kernel, the grid computed from the chosen configuration. A
 * zero grid dimension launches nothing. */
ST_API st_status st_autotuned_launch_config(st_autotuned *k, int index,
                                            const unsigned grid[3],
                                            void *stream, const st_arg *args,
                                            int num_args);

/* One stage of the pipeline ("ast", "tile", "pipelined", "layouts", "mlir",
 * "llvm", "ptx") for one variant; `div16` names integer parameters promised to be
 * multiples of 16. Needs no GPU when options->arch is set. "remarks" gives
 * the JIT's performance remarks on the variant instead ("file:line:col:
 * remark: [kind] ..." with the source line and a caret, each; empty when
 * none). */
ST_API st_status st_compile_stage(const char *source, const char *filename,
                                  const char *name,
                                  const char *const *const_names,
                                  const char *const *const_values,
                                  int num_constants, const st_options *options,
                                  const char *const *div16, int num_div16,
                                  const char *stage, char **text);

/* The cached artifacts of one variant: PTX and cubin (cubin_size 0 when the
 * driver JIT-compiles it, e.g. warp-specialized kernels). */
ST_API st_status st_compile_artifacts(
    const char *source, const char *filename, const char *name,
    const char *const *const_names, const char *const *const_values,
    int num_constants, const st_options *options, const char *const *div16,
    int num_div16, char **ptx, char **cubin, size_t *cubin_size);

/*--- Ops (runtime/ops; each checks its arguments before launching) -------*/

/* SparseDrop (ops/SparseDrop.h). */
typedef struct st_sparsedrop_problem {
  int dtype; /* ST_BF16 or ST_F16 */
  int64_t M, N, K, block_m, block_k;
  double p;
} st_sparsedrop_problem;

/* The DSL's random stream on the host (sparsetile/runtime/Random.h):
 * Philox-4x32-10 with key (seed lo, seed hi) and counter (offset lo,
 * offset hi, 0, 0). A 32-bit DSL offset o is passed as (uint32_t)o; a 32-bit
 * DSL seed widened by its signedness. st_random_randint4x writes the four
 * words of randint4x; st_random_rand is bit for bit the device's rand;
 * st_random_randn agrees with the device's randn to a few ulp. */
ST_API void st_random_randint4x(uint64_t seed, uint64_t offset,
                                uint32_t out[4]);
ST_API float st_random_rand(uint64_t seed, uint64_t offset);
ST_API float st_random_randn(uint64_t seed, uint64_t offset);

/* The int64 words of the block mask of an M x K operand; -1 (with
 * st_last_error) for a negative M or K, a block <= 0, or a count past
 * INT64_MAX. */
ST_API int64_t st_sparsedrop_mask_words(int64_t M, int64_t K, int64_t block_m,
                                        int64_t block_k);
ST_API st_status st_sparsedrop_generate_mask(uint64_t seed, int64_t offset,
                                             double p, int64_t M, int64_t K,
                                             int64_t block_m, int64_t block_k,
                                             uint64_t mask_out, void *stream);
/* The mask at offset *offset_at + base, read on the device (offset_at: one
 * int64, 16-byte aligned): graph-safe, as the offset is not frozen into a
 * captured launch. */
ST_API st_status st_sparsedrop_generate_mask_at(uint64_t seed,
                                                uint64_t offset_at,
                                                int64_t base, double p,
                                                int64_t M, int64_t K,
                                                int64_t block_m,
                                                int64_t block_k,
                                                uint64_t mask_out,
                                                void *stream);
/* Y [M, N] = s (X . mask) W^T */
ST_API st_status st_sparsedrop_forward(const st_sparsedrop_problem *p,
                                       uint64_t X, int64_t stride_x, uint64_t W,
                                       int64_t stride_w, uint64_t mask,
                                       uint64_t Y, int64_t stride_y,
                                       void *stream);
/* dX [M, K] = s (dY W) . mask */
ST_API st_status st_sparsedrop_backward_x(const st_sparsedrop_problem *p,
                                          uint64_t dY, int64_t stride_dy,
                                          uint64_t W, int64_t stride_w,
                                          uint64_t mask, uint64_t dX,
                                          int64_t stride_dx, void *stream);
/* dW [N, K] = s dY^T (X . mask) */
ST_API st_status st_sparsedrop_backward_w(const st_sparsedrop_problem *p,
                                          uint64_t dY, int64_t stride_dy,
                                          uint64_t X, int64_t stride_x,
                                          uint64_t mask, uint64_t dW,
                                          int64_t stride_dw, void *stream);

/* 2:4 sparsity (ops/Sparse24.h); mask arguments are int8 0/1, 0 = none. */
ST_API st_status st_mask24_transposable(int dtype, int64_t R, int64_t C,
                                        uint64_t w, int64_t stride_w,
                                        uint64_t mask, int64_t stride_mask,
                                        uint64_t out, int64_t stride_out,
                                        void *stream);
ST_API st_status st_mask24_rowwise(int dtype, int64_t R, int64_t C, uint64_t w,
                                   int64_t stride_w, uint64_t mask,
                                   int64_t stride_mask, uint64_t out,
                                   int64_t stride_out, void *stream);
/* Synchronous: entries where the int8 masks a and b differ. */
ST_API st_status st_mask_flip_count(uint64_t a, uint64_t b, int64_t n,
                                    void *stream, int64_t *count);
ST_API st_status st_masked_decay(int dtype, uint64_t g, uint64_t w,
                                 uint64_t mask, int64_t n, float lambda,
                                 void *stream);
ST_API st_status st_mvue24(int dtype, uint64_t x, uint64_t y, int64_t n,
                           uint64_t seed, int64_t offset, void *stream);
/* W [R, C] under its mask -> W's compressed operand (vals R * C/2 entries,
   meta st_compressed24_meta(R, C) words) and W^T's (vals_t C * R/2,
   meta_t st_compressed24_meta(C, R)); R and C multiples of 16. */
ST_API st_status st_compress24(int dtype, int64_t R, int64_t C, uint64_t w,
                               int64_t stride_w, uint64_t mask,
                               int64_t stride_mask, uint64_t vals,
                               uint64_t meta, uint64_t vals_t, uint64_t meta_t,
                               void *stream);
/* One pass of a mask update: transposable mask, W * mask and both
   compressed operands (as st_compress24's). out may be w (in place, with
   stride_out = stride_w) but must not overlap it otherwise. */
ST_API st_status st_mask24_update(int dtype, int64_t R, int64_t C, uint64_t w,
                                  int64_t stride_w, uint64_t mask,
                                  int64_t stride_mask, uint64_t out,
                                  int64_t stride_out, uint64_t vals,
                                  uint64_t meta, uint64_t vals_t,
                                  uint64_t meta_t, void *stream);
/* Y [M, R] = X [M, C] W^T from W's compressed operand. */
ST_API st_status st_sparse24_linear_forward(int dtype, int64_t M, int64_t R,
                                            int64_t C, uint64_t vals,
                                            uint64_t meta, uint64_t x,
                                            int64_t ldx, uint64_t y,
                                            int64_t ldy, void *stream);
/* dX [M, C] = dY [M, R] W from W^T's compressed operand. */
ST_API st_status st_sparse24_linear_backward_x(int dtype, int64_t M, int64_t R,
                                               int64_t C, uint64_t vals_t,
                                               uint64_t meta_t, uint64_t dy,
                                               int64_t lddy, uint64_t dx,
                                               int64_t lddx, void *stream);
/* The activations the 2:4 layer GEMMs fuse (ops::LinearActivation). */
typedef enum st_activation {
  ST_ACT_NONE = 0,
  ST_ACT_GELU_TANH = 1, /* F.gelu(approximate="tanh") */
} st_activation;
/* With the epilogue fused (ops::sparse24LinearForwardAct): H = X W^T + bias
   (bias [R] of dtype, 0 for none); act ST_ACT_NONE: Y = H (h must be 0);
   ST_ACT_GELU_TANH: H rounded to dtype is stored to h (row stride ldy) and
   Y = gelu_tanh(H). */
ST_API st_status st_sparse24_linear_forward_act(int dtype, int64_t M, int64_t R,
                                                int64_t C, uint64_t vals,
                                                uint64_t meta, uint64_t x,
                                                int64_t ldx, uint64_t bias,
                                                int act, uint64_t h, uint64_t y,
                                                int64_t ldy, void *stream);
/* dX [M, C] = (dY W) * act'(H), H [M, C] at h with row stride lddx; act
   must be ST_ACT_GELU_TANH (ops::sparse24LinearBackwardXAct). */
ST_API st_status st_sparse24_linear_backward_x_act(
    int dtype, int64_t M, int64_t R, int64_t C, uint64_t vals_t,
    uint64_t meta_t, uint64_t dy, int64_t lddy, int act, uint64_t h,
    uint64_t dx, int64_t lddx, void *stream);
/* The weight gradient (ops/Sparse24.h): dY [M, R] -> the compressed MVUE
   2:4 operand of dY^T, vals [R, Kp/2] and meta (R * Kp/16 words =
   st_compressed24_meta(R, Kp), blocked by K steps of 128 as every
   compressed operand's: ops/Sparse24.h) with Kp = M
   rounded up to a multiple of 128; then dW [R, C] (f32) = S(dY^T) X. */
ST_API st_status st_mvue24_compress_t(int dtype, int64_t M, int64_t R,
                                      uint64_t dy, int64_t lddy, uint64_t vals,
                                      uint64_t meta, uint64_t seed,
                                      int64_t offset, void *stream);
ST_API st_status st_sparse24_linear_backward_w(int dtype, int64_t M, int64_t R,
                                               int64_t C, uint64_t vals,
                                               uint64_t meta, uint64_t x,
                                               int64_t ldx, uint64_t dw,
                                               int64_t lddw, void *stream);
/* The same with dW stored as dw_dtype: ST_F32 (as above) or dtype (what
   torch gives a bf16/f16 parameter's gradient; the f32 accumulator rounded
   to nearest even). */
ST_API st_status st_sparse24_linear_backward_w_ex(int dtype, int64_t M,
                                                  int64_t R, int64_t C,
                                                  uint64_t vals, uint64_t meta,
                                                  uint64_t x, int64_t ldx,
                                                  uint64_t dw, int dw_dtype,
                                                  int64_t lddw, void *stream);

/* The general 2:4 GEMM both of the above are: out [M, I] = x [M, K] A^T with
 * A [I, K] compressed (vals, meta), K a multiple of 64, with an explicit
 * tiling (NULL: the defaults; fields as ops::SparseLinearTiles, -1 where
 * that struct defaults to -1). */
typedef struct st_sparse_linear_tiles {
  int tile_i, tile_m, warps, prefetch;
  int tma, stages, warp_specialize, persistent;
} st_sparse_linear_tiles;
ST_API st_status st_sparse_linear(int dtype, int64_t M, int64_t I, int64_t K,
                                  uint64_t vals, uint64_t meta, uint64_t x,
                                  int64_t ldx, uint64_t out, int64_t ldo,
                                  void *stream,
                                  const st_sparse_linear_tiles *tiles);
/* The int16 words of the metadata of a compressed 2:4 operand [rows, cols]
 * (ops::compressedMeta): rows * 8 * ceil(cols / 128), the words blocked by
 * 128 columns and a last partial block padded to 8 words a row (which
 * st_compress24 and st_mask24_update write); vals has rows * cols / 2
 * entries. -1 (with st_last_error) for a negative argument or a count past
 * INT64_MAX. Every meta and meta_t buffer of the 2:4 functions above has
 * this size (Kp of st_mvue24_compress_t is a multiple of 128: no padding). */
ST_API int64_t st_compressed24_meta(int64_t rows, int64_t cols);
/* Asynchronous flip counts: st_mask_flip_partials(n) int32 partial counts
 * of differing entries of the int8 masks a and b, one per 4096 entries
 * (-1, with st_last_error, for a negative n). */
ST_API int64_t st_mask_flip_partials(int64_t n);
ST_API st_status st_mask_flip_count_partials(uint64_t a, uint64_t b, int64_t n,
                                             uint64_t partials, void *stream);

/* Gated activations (ops/GatedActivations.h): activation 0 SiLU (SwiGLU),
 * 1 GELU (erf), 2 GELU (tanh); layout 0 halves [g | u], 1 interleaved. */
typedef struct st_glu_problem {
  int dtype;
  int64_t M, F;
  int activation, layout;
  int64_t interleave_width; /* 0: 64 */
} st_glu_problem;
ST_API st_status st_glu_forward(const st_glu_problem *p, uint64_t h,
                                int64_t stride_h, uint64_t y, int64_t stride_y,
                                void *stream);
ST_API st_status st_glu_backward(const st_glu_problem *p, uint64_t h,
                                 int64_t stride_h, uint64_t dy,
                                 int64_t stride_dy, uint64_t dh,
                                 int64_t stride_dh, void *stream);

/*--- Scratch memory (sparsetile/runtime/LaunchMemory.h) -------------------*/

/* Where ops take temporary device memory, as triton.set_allocator: `alloc`
 * returns a 16-byte aligned device pointer valid for work enqueued on
 * `stream` (0 on failure); `release` gives it back in stream order (it may
 * be reused only by work ordered after what was enqueued). With
 * only_while_capturing != 0 they are called only while the stream is
 * captured into a CUDA graph. alloc == NULL resets to the runtime's own
 * per-stream buffers, which cannot grow during a capture. */
typedef uint64_t (*st_alloc_fn)(size_t bytes, void *stream, void *ctx);
typedef void (*st_release_fn)(uint64_t ptr, size_t bytes, void *stream,
                              void *ctx);
ST_API st_status st_set_allocator(st_alloc_fn alloc, st_release_fn release,
                                  void *ctx, int only_while_capturing);

/*--- Logging (sparsetile/runtime/Log.h) -----------------------------------*/

/* Where the runtime reports compiles (with their time), cache hits and
 * autotune choices: messages up to `level` (0 off, 1 info, 2 debug) go to
 * `fn(level, message, ctx)`, or to stderr when fn is NULL. Replaces what
 * SPARSETILE_LOG set. `fn` may be called from any thread, one call at a
 * time. */
typedef void (*st_log_fn)(int level, const char *message, void *ctx);
ST_API st_status st_set_log_callback(st_log_fn fn, void *ctx, int level);

/* Counts of the launch memory (descriptor blocks cached and uploaded, of
 * those uploaded as copy nodes of captured graphs; tile queues), for tests. */
ST_API st_status st_launch_memory_stats(int64_t out[4]);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SPARSETILE_SPARSETILE_H */
