/*===- capi_test.c - The C ABI, from C --------------------------------------===*
 *
 * Compiled as C (not C++) so the header is proven to be plain C. Runs without
 * a GPU: compile-only calls target sm_90 explicitly; a launch either runs (on
 * a GPU) or fails with ST_ERROR_CUDA and a message, never a crash. Exits
 * non-zero on the first failed check.
 *
 *===----------------------------------------------------------------------===*/

#include "sparsetile/sparsetile.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static const char *kAdd =
    "kernel add(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 128) {\n"
    "  let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "  let m = offs < n;\n"
    "  store(out + offs, load(x + offs, mask=m) + 1.0, mask=m);\n"
    "}\n";

int main(void) {
  CHECK(st_abi_version() == ST_ABI_VERSION, "abi %d", st_abi_version());
  CHECK(strlen(st_version()) > 0, "empty version");

  st_options sm90;
  memset(&sm90, 0, sizeof sm90);
  sm90.arch = "sm_90";

  /* Every stage prints, and the constant reaches the PTX. */
  const char *names[] = {"BLOCK"}, *values[] = {"256"};
  const char *stages[] = {"ast",  "tile", "pipelined", "layouts",
                          "mlir", "llvm", "ptx"};
  const int numStages = (int)(sizeof stages / sizeof stages[0]);
  for (int i = 0; i < numStages; ++i) {
    char *text = NULL;
    st_status s = st_compile_stage(kAdd, "add.tile", "add", names, values, 1,
                                   &sm90, NULL, 0, stages[i], &text);
    CHECK(s == ST_OK && text && strlen(text) > 0, "stage %s: %d %s",
          stages[i], s, st_last_error());
    if (i == numStages - 1)
      CHECK(text && strstr(text, ".entry add"), "no entry in the PTX");
    st_free(text);
  }

  /* A syntax error: ST_ERROR_COMPILE with file:line:col and a caret. */
  st_kernel *k = NULL;
  st_status s = st_kernel_get("kernel bad(x: *f32) {\n  y = ;\n}\n", "bad.tile",
                              NULL, NULL, NULL, 0, &sm90, &k);
  CHECK(s == ST_ERROR_COMPILE, "status %d", s);
  CHECK(strstr(st_last_error(), "bad.tile:2:7: error") != NULL, "message: %s",
        st_last_error());
  CHECK(strchr(st_last_error(), '^') != NULL, "no caret: %s", st_last_error());

  /* The signature of a good kernel. */
  s = st_kernel_get(kAdd, "add.tile", "add", NULL, NULL, 0, &sm90, &k);
  CHECK(s == ST_OK && k, "get: %d %s", s, st_last_error());
  int count = 0;
  CHECK(st_kernel_num_params(k, &count) == ST_OK && count == 3, "params %d",
        count);
  const char *pname = NULL;
  int isPtr = -1, isDesc = -1, dtype = -1;
  CHECK(st_kernel_param(k, 2, &pname, &isPtr, &isDesc, &dtype) == ST_OK &&
            strcmp(pname, "n") == 0 && !isPtr && !isDesc && dtype == ST_I32,
        "param 2: %s %d %d %d", pname ? pname : "?", isPtr, isDesc, dtype);
  CHECK(st_kernel_param(k, 3, &pname, NULL, NULL, NULL) ==
            ST_ERROR_INVALID_ARGUMENT,
        "index 3 accepted");

  /* Its constants, with the values the compiler reads: BLOCK's default, or
   * the value given (as text, any base stc -D takes). */
  CHECK(st_kernel_num_constants(k, &count) == ST_OK && count == 1,
        "constants %d", count);
  const char *cname = NULL, *cvalue = NULL;
  int isType = -1;
  CHECK(st_kernel_constant(k, 0, &cname, &dtype, &isType, &cvalue) == ST_OK &&
            strcmp(cname, "BLOCK") == 0 && dtype == ST_I32 && !isType &&
            cvalue && strcmp(cvalue, "128") == 0,
        "constant 0: %s %d %d %s", cname ? cname : "?", dtype, isType,
        cvalue ? cvalue : "NULL");
  CHECK(st_kernel_constant(k, 1, NULL, NULL, NULL, NULL) ==
            ST_ERROR_INVALID_ARGUMENT,
        "constant index 1 accepted");
  {
    st_kernel *given = NULL;
    const char *bname[] = {"BLOCK"}, *bvalue[] = {"0x100"};
    CHECK(st_kernel_get(kAdd, "add.tile", "add", bname, bvalue, 1, &sm90,
                        &given) == ST_OK &&
              st_kernel_constant(given, 0, NULL, NULL, NULL, &cvalue) ==
                  ST_OK &&
              cvalue && strcmp(cvalue, "256") == 0,
          "given BLOCK: %s", cvalue ? cvalue : st_last_error());
    /* Every kind of constant: a dtype, f32, bool, an expression of an
     * earlier constant, and one without a value (NULL). */
    static const char *kTyped =
        "kernel t(x: *T, const T: dtype = bf16, const S: f32 = 0.5,\n"
        "         const F: bool = true, const B: i32 = 64,\n"
        "         const TWICE: i32 = B * 2, const NONE: i32) {\n"
        "}\n";
    static const struct {
      const char *name, *value;
      int dtype, isType;
    } expect[] = {{"T", "bf16", ST_BF16, 1},   {"S", "0.5", ST_F32, 0},
                  {"F", "true", ST_I1, 0},     {"B", "64", ST_I32, 0},
                  {"TWICE", "128", ST_I32, 0}, {"NONE", NULL, ST_I32, 0}};
    st_kernel *typed = NULL;
    CHECK(st_kernel_get(kTyped, "t.tile", "t", NULL, NULL, 0, &sm90,
                        &typed) == ST_OK &&
              st_kernel_num_constants(typed, &count) == ST_OK && count == 6,
          "typed: %d %s", count, st_last_error());
    for (int i = 0; typed && i < 6; ++i) {
      CHECK(st_kernel_constant(typed, i, &cname, &dtype, &isType, &cvalue) ==
                    ST_OK &&
                strcmp(cname, expect[i].name) == 0 &&
                dtype == expect[i].dtype && isType == expect[i].isType &&
                (expect[i].value ? cvalue && strcmp(cvalue, expect[i].value) == 0
                                 : cvalue == NULL),
            "constant %d: %s %d %d %s", i, cname ? cname : "?", dtype, isType,
            cvalue ? cvalue : "NULL");
    }
  }

  /* Wrong arguments are rejected before anything runs, naming the
   * parameter; the check needs no GPU. */
  unsigned grid[3] = {1, 1, 1};
  st_arg args[3];
  memset(args, 0, sizeof args);
  args[0].kind = ST_ARG_POINTER, args[0].dtype = ST_F32, args[0].bits = 256;
  args[1].kind = ST_ARG_POINTER, args[1].dtype = ST_F16, args[1].bits = 512;
  args[2].kind = ST_ARG_SCALAR, args[2].dtype = ST_I32, args[2].bits = 7;
  s = st_kernel_launch(k, grid, NULL, 0, NULL, args, 3);
  CHECK(s != ST_OK, "a pointer to f16 for *f32 launched");
  CHECK(strstr(st_last_error(), "out") != NULL, "message: %s", st_last_error());
  s = st_kernel_launch(k, grid, NULL, 0, NULL, args, 2);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT && strstr(st_last_error(), "takes 3"),
        "count: %d %s", s, st_last_error());
  /* A count far past the array is refused before any of it is read or
   * converted (it used to reserve INT_MAX arguments: "out of host memory"). */
  s = st_kernel_launch(k, grid, NULL, 0, NULL, args, INT_MAX);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT &&
            strstr(st_last_error(), "num_args is 2147483647 but kernel 'add' "
                                    "takes 3 arguments"),
        "INT_MAX args: %d %s", s, st_last_error());
  s = st_kernel_launch(k, grid, NULL, 0, NULL, args, -1);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT && strstr(st_last_error(), "num_args"),
        "negative count: %d %s", s, st_last_error());

  /* Options out of range are refused up front, naming the field (99 and
   * -1000 stages used to be accepted silently; stc refuses both). */
  {
    struct {
      int stages, warps, ptx, nospec;
      const char *field;
    } bad[] = {{99, 0, 0, 0, "num_stages = 99"},
               {-1000, 0, 0, 0, "num_stages = -1000"},
               {0, 4096, 0, 0, "num_warps = 4096"},
               {0, -4, 0, 0, "num_warps = -4"},
               {0, 0, 1000, 0, "ptx_version = 1000"},
               {0, 0, 0, 2, "no_specialize = 2"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
      st_options o = sm90;
      o.num_stages = bad[i].stages, o.num_warps = bad[i].warps;
      o.ptx_version = bad[i].ptx, o.no_specialize = bad[i].nospec;
      st_kernel *bk = NULL;
      s = st_kernel_get(kAdd, "add.tile", "add", NULL, NULL, 0, &o, &bk);
      CHECK(s == ST_ERROR_INVALID_ARGUMENT &&
                strstr(st_last_error(), bad[i].field) && bk == NULL,
            "%s: %d %s", bad[i].field, s, st_last_error());
      char *text = NULL;
      s = st_compile_stage(kAdd, "add.tile", "add", NULL, NULL, 0, &o, NULL, 0,
                           "ptx", &text);
      CHECK(s == ST_ERROR_INVALID_ARGUMENT &&
                strstr(st_last_error(), bad[i].field) && text == NULL,
            "stage, %s: %d %s", bad[i].field, s, st_last_error());
    }
    st_options ok = sm90;
    ok.num_stages = 8, ok.num_warps = 8, ok.ptx_version = 85;
    st_kernel *gk = NULL;
    s = st_kernel_get(kAdd, "add.tile", "add", NULL, NULL, 0, &ok, &gk);
    CHECK(s == ST_OK && gk, "in-range options: %d %s", s, st_last_error());
  }

  /* A kernel that declares @autotune has an autotuned form (made from the
   * source alone, no GPU needed); a plain one has none. */
  st_autotuned *tuned = (st_autotuned *)1;
  s = st_autotuned_get(kAdd, "add.tile", "add", NULL, NULL, 0, &sm90, &tuned);
  CHECK(s == ST_OK && tuned == NULL, "plain kernel: %d %p", s, (void *)tuned);
  const char *kTuned =
      "@autotune(key=[n], grid=[cdiv(n, BLOCK)], configs=[{BLOCK: 128}, "
      "{BLOCK: 512, num_warps: 8}])\n"
      "kernel add(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 256) {\n"
      "  let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
      "  store(out + i, load(x + i, mask=i < n), mask=i < n);\n}\n";
  s = st_autotuned_get(kTuned, "tuned.tile", NULL, NULL, NULL, 0, &sm90,
                       &tuned);
  CHECK(s == ST_OK && tuned != NULL, "autotuned: %d %s", s, st_last_error());
  s = st_autotuned_launch(tuned, NULL, args, 1);
  CHECK(s != ST_OK && strstr(st_last_error(), "takes 3"), "one argument: %d %s",
        s, st_last_error());
  s = st_autotuned_launch(tuned, NULL, args, INT_MAX);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT &&
            strstr(st_last_error(), "num_args is 2147483647"),
        "autotuned, INT_MAX args: %d %s", s, st_last_error());
  int index = -1;
  s = st_autotuned_choice(tuned, NULL, args, INT_MAX, &index, NULL);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT &&
            strstr(st_last_error(), "num_args is 2147483647") && index == -1,
        "autotuned choice, INT_MAX args: %d %s", s, st_last_error());

  /* An op with a bad shape: an error naming the op, nothing launched. */
  st_sparsedrop_problem p;
  memset(&p, 0, sizeof p);
  p.dtype = ST_BF16, p.M = 64, p.N = 64, p.K = 64, p.block_m = 100,
  p.block_k = 128, p.p = 0.5;
  s = st_sparsedrop_forward(&p, 256, 64, 512, 64, 768, 1024, 64, NULL);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT && strstr(st_last_error(), "blockM"),
        "sparsedrop: %d %s", s, st_last_error());

  /* The general 2:4 GEMM checks its shape first (K a multiple of 64). */
  st_sparse_linear_tiles tiles = {256, 128, 8, 1, -1, 0, -1, -1};
  s = st_sparse_linear(ST_BF16, 64, 64, 100, 256, 512, 768, 100, 1024, 64, NULL,
                       &tiles);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT && strstr(st_last_error(), "K"),
        "sparse_linear: %d %s", s, st_last_error());
  /* The weight gradient and the one-pass mask update: bad arguments are
     reported before any launch, with the C++ op's name. */
  s = st_mvue24_compress_t(ST_BF16, 128, 64, 256, 32, 512, 768, 1, 0, NULL);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT &&
            strstr(st_last_error(), "mvue24CompressT: lddy = 32"),
        "mvue24_compress_t: %d %s", s, st_last_error());
  s = st_sparse24_linear_backward_w(ST_BF16, 128, 64, 64, 256, 512, 768, 64,
                                    1024, 32, NULL);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT &&
            strstr(st_last_error(), "sparse24LinearBackwardW: lddw = 32"),
        "sparse24_linear_backward_w: %d %s", s, st_last_error());
  s = st_sparse24_linear_backward_w_ex(ST_BF16, 128, 64, 64, 256, 512, 768, 64,
                                       1024, ST_F16, 64, NULL);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT &&
            strstr(st_last_error(), "sparse24LinearBackwardW: dW must be f32 "
                                    "or bf16"),
        "sparse24_linear_backward_w_ex: %d %s", s, st_last_error());
  s = st_mask24_update(ST_BF16, 16, 16, 256, 16, 512, 16, 256, 32, 768, 1024,
                       1280, 1536, NULL);
  CHECK(s == ST_ERROR_INVALID_ARGUMENT &&
            strstr(st_last_error(), "out = w (in place) needs strideOut = "
                                    "strideW, got 32 and 16"),
        "mask24_update: %d %s", s, st_last_error());
  CHECK(st_compressed24_meta(3, 1600) == 3 * 104 &&
            st_compressed24_meta(5, 1024) == 5 * 64 &&
            st_compressed24_meta(1, 144) == 16 &&
            st_compressed24_meta(0, 64) == 0,
        "compressed24_meta %lld", (long long)st_compressed24_meta(3, 1600));
  CHECK(st_compressed24_meta(-1, 64) == -1 &&
            strstr(st_last_error(), "must be >= 0"),
        "compressed24_meta of -1: %s", st_last_error());
  CHECK(st_compressed24_meta(INT64_MAX, 1600) == -1 &&
            strstr(st_last_error(), "more than INT64_MAX words"),
        "compressed24_meta overflow: %s", st_last_error());
  CHECK(st_mask_flip_partials(4097) == 2, "partials %lld",
        (long long)st_mask_flip_partials(4097));
  CHECK(st_mask_flip_partials(0) == 0, "partials of 0");
  /* n + 4095 used to overflow: a negative count. */
  CHECK(st_mask_flip_partials(INT64_MAX) == INT64_MAX / 4096 + 1,
        "partials of INT64_MAX: %lld",
        (long long)st_mask_flip_partials(INT64_MAX));
  CHECK(st_mask_flip_partials(-1) == -1 &&
            strstr(st_last_error(), "n = -1 is negative"),
        "partials of -1: %s", st_last_error());
  CHECK(st_sparsedrop_mask_words(256, 4096, 128, 64) == 2, "mask words %lld",
        (long long)st_sparsedrop_mask_words(256, 4096, 128, 64));
  CHECK(st_sparsedrop_mask_words(INT64_MAX, INT64_MAX, 1, 1) == -1 &&
            strstr(st_last_error(), "more than INT64_MAX words"),
        "mask words overflow: %s", st_last_error());
  CHECK(st_sparsedrop_mask_words(INT64_MAX, 64, INT64_MAX - 1, 64) == 2,
        "mask words, M near INT64_MAX: %lld",
        (long long)st_sparsedrop_mask_words(INT64_MAX, 64, INT64_MAX - 1, 64));
  CHECK(st_sparsedrop_mask_words(64, 64, 0, 64) == -1 &&
            strstr(st_last_error(), "block_m = 0"),
        "mask words, zero block: %s", st_last_error());

  /* Without a GPU, the error says so (ST_ERROR_CUDA), with a reason. */
  const char *why = NULL;
  if (!st_gpu_available(&why)) {
    args[1].dtype = ST_F32;
    s = st_kernel_launch(k, grid, NULL, 0, NULL, args, 3);
    CHECK(s == ST_ERROR_CUDA && strlen(st_last_error()) > 0, "no gpu: %d %s",
          s, st_last_error());
    printf("no GPU (%s): launch reported: %s\n", why, st_last_error());
  }
  if (failures)
    fprintf(stderr, "%d check(s) failed\n", failures);
  else
    printf("all C ABI checks passed\n");
  return failures ? 1 : 0;
}
