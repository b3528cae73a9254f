//===- CApi.cpp - The C ABI (sparsetile.h) over the C++ runtime -----------===//
//
// Each entry point converts its C arguments, calls the C++ API inside
// `guarded`, and turns any exception into a status code plus the
// thread-local message of st_last_error(): no exception crosses the ABI.
// Kernel handles are the JIT's own Kernel objects (they live as long as the
// process-wide JIT), so a handle costs nothing to keep and is never freed.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/sparsetile.h"

#include "sparsetile/KernelConstants.h"

#include "sparsetile/ops/GatedActivations.h"
#include "sparsetile/ops/Sparse24.h"
#include "sparsetile/ops/SparseDrop.h"
#include "sparsetile/runtime/Autotune.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"
#include "sparsetile/runtime/LaunchMemory.h"
#include "sparsetile/runtime/Log.h"
#include "sparsetile/runtime/Random.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

using namespace sparsetile;

namespace {

thread_local std::string lastError;

/// Runs `body`, mapping exceptions to statuses. The message of the last
/// failure stays readable through st_last_error().
template <typename F> st_status guarded(F &&body) {
  try {
    body();
    lastError.clear();
    return ST_OK;
  } catch (const rt::CompileError &e) {
    lastError = e.what();
    return ST_ERROR_COMPILE;
  } catch (const rt::CudaError &e) {
    lastError = e.what();
    return ST_ERROR_CUDA;
  } catch (const rt::Error &e) {
    lastError = e.what();
    return ST_ERROR_INVALID_ARGUMENT;
  } catch (const std::bad_alloc &) {
    lastError = "out of host memory";
    return ST_ERROR_INTERNAL;
  } catch (const std::exception &e) {
    lastError = e.what();
    return ST_ERROR_INTERNAL;
  } catch (...) {
    lastError = "unknown error";
    return ST_ERROR_INTERNAL;
  }
}

void require(bool ok, const std::string &what) {
  if (!ok)
    throw rt::Error(what);
}

DType toDType(int code, const char *what) {
  require(code >= int(DType::I1) && code <= int(kLastDType),
          std::string(what) + ": unknown dtype code " + std::to_string(code));
  return DType(code);
}

CUstream_st *toStream(void *s) { return static_cast<CUstream_st *>(s); }

std::string str(const char *s) { return s ? s : ""; }

rt::Constants toConstants(const char *const *names, const char *const *values,
                          int count) {
  require(count >= 0 && (count == 0 || (names && values)),
          "constants: names and values must both be given");
  rt::Constants c;
  for (int i = 0; i < count; ++i) {
    require(names[i] && values[i], "constants: null name or value");
    c[names[i]] = values[i];
  }
  return c;
}

/// Checks an int option against its range before anything uses it (the
/// ranges stc's flags take).
void requireRange(int v, int lo, int hi, const char *field,
                  const char *meaning) {
  require(v >= lo && v <= hi, std::string("st_options.") + field + " = " +
                                  std::to_string(v) + " is out of range: " +
                                  meaning);
}

rt::JITOptions toJITOptions(const st_options *o) {
  rt::JITOptions j;
  if (!o)
    return j;
  requireRange(o->ptx_version, 0, 999, "ptx_version",
               "major*10+minor, e.g. 85, or 0 for the arch's default");
  requireRange(o->num_warps, 0, 1024, "num_warps",
               "a number of warps, or 0 for the kernel's @num_warps");
  requireRange(o->num_stages, 0, 8, "num_stages",
               "a ring depth from 1 to 8, or 0 for as many as fit");
  require(o->no_specialize == 0 || o->no_specialize == 1,
          "st_options.no_specialize = " + std::to_string(o->no_specialize) +
              " is out of range: 0 or 1");
  j.arch = str(o->arch);
  j.ptxVersion = o->ptx_version;
  j.numWarps = o->num_warps;
  j.numStages = o->num_stages;
  require(o->debug == 0 || o->debug == 1,
          "st_options.debug = " + std::to_string(o->debug) +
              " is out of range: 0 or 1");
  j.specialize = !o->no_specialize;
  j.debug = j.debug || o->debug; // SPARSETILE_DEBUG=1 turns it on for all.
  return j;
}

std::vector<std::string> toNames(const char *const *names, int count) {
  require(count >= 0 && (count == 0 || names), "div16: null list");
  std::vector<std::string> v;
  for (int i = 0; i < count; ++i) {
    require(names[i] != nullptr, "div16: null name");
    v.push_back(names[i]);
  }
  return v;
}

/// A malloc'd copy the caller releases with st_free (size bytes, plus a
/// terminating NUL so text can be read as a C string).
char *copyOut(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (!p)
    throw std::bad_alloc();
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

rt::Kernel &kernelOf(st_kernel *k) {
  require(k != nullptr, "null kernel handle");
  return *reinterpret_cast<rt::Kernel *>(k);
}

rt::AutotunedKernel &autotunedOf(st_autotuned *k) {
  require(k != nullptr, "null autotuned kernel handle");
  return *reinterpret_cast<rt::AutotunedKernel *>(k);
}

rt::Arg toArg(const st_arg &a, int index) {
  std::string what = "argument " + std::to_string(index);
  switch (a.kind) {
  case ST_ARG_SCALAR: {
    DType t = toDType(a.dtype, what.c_str());
    switch (t) {
    case DType::I1:
      return rt::Arg::i1(a.bits & 1);
    case DType::I8:
      return rt::Arg::i8(int8_t(a.bits));
    case DType::I16:
      return rt::Arg::i16(int16_t(a.bits));
    case DType::I32:
      return rt::Arg::i32(int32_t(a.bits));
    case DType::I64:
      return rt::Arg::i64(int64_t(a.bits));
    case DType::U8:
      return rt::Arg::u8(uint8_t(a.bits));
    case DType::U16:
      return rt::Arg::u16(uint16_t(a.bits));
    case DType::U32:
      return rt::Arg::u32(uint32_t(a.bits));
    case DType::U64:
      return rt::Arg::u64(a.bits);
    case DType::F16:
      return rt::Arg::f16Bits(uint16_t(a.bits));
    case DType::BF16:
      return rt::Arg::bf16Bits(uint16_t(a.bits));
    case DType::F32: {
      float f;
      uint32_t b = uint32_t(a.bits);
      std::memcpy(&f, &b, sizeof(f));
      return rt::Arg::f32(f);
    }
    case DType::F64: {
      double d;
      std::memcpy(&d, &a.bits, sizeof(d));
      return rt::Arg::f64(d);
    }
    case DType::F8E4M3:
    case DType::F8E5M2:
      // The DSL has no fp8 scalar parameters (pass an f32 and convert).
      throw rt::Error(what + ": " + dtypeName(t) +
                      " is a pointer element type only, not a scalar");
    }
    break;
  }
  case ST_ARG_POINTER:
    if (a.dtype < 0)
      return rt::Arg::untypedPtr(a.bits);
    return rt::Arg::ptr(a.bits, toDType(a.dtype, what.c_str()));
  case ST_ARG_TENSOR2D:
    return rt::Arg::tensor2d(a.bits, toDType(a.dtype, what.c_str()), a.rows,
                             a.cols, a.ld);
  }
  throw rt::Error(what + ": unknown argument kind " + std::to_string(a.kind));
}

/// The arch a compile-only call targets: the given one, else the GPU's.
std::string archFor(const rt::JITOptions &o) {
  if (!o.arch.empty())
    return o.arch;
  std::string why;
  if (!rt::gpuAvailable(&why))
    throw rt::CudaError("no arch given and no GPU to take it from (" + why +
                        "); set st_options.arch");
  return rt::Device::get().arch();
}

ops::sparsedrop::Problem toProblem(const st_sparsedrop_problem *p) {
  require(p != nullptr, "sparsedrop: null problem");
  ops::sparsedrop::Problem q;
  q.dtype = toDType(p->dtype, "sparsedrop problem");
  q.M = p->M;
  q.N = p->N;
  q.K = p->K;
  q.blockM = p->block_m;
  q.blockK = p->block_k;
  q.p = p->p;
  return q;
}

ops::GluProblem toGlu(const st_glu_problem *p) {
  require(p != nullptr, "glu: null problem");
  require(p->activation >= 0 && p->activation <= 2,
          "glu: activation must be 0 (SiLU), 1 (GELU) or 2 (GELU tanh)");
  require(p->layout == 0 || p->layout == 1,
          "glu: layout must be 0 (halves) or 1 (interleaved)");
  ops::GluProblem q;
  q.dtype = toDType(p->dtype, "glu problem");
  q.M = p->M;
  q.F = p->F;
  q.activation = ops::Activation(p->activation);
  q.layout = ops::GluLayout(p->layout);
  if (p->interleave_width)
    q.interleaveWidth = p->interleave_width;
  return q;
}

/// The C arguments as Args. `params` is the kernel's signature: the count
/// is checked against it first, since it is all that says how long the
/// caller's array is (a wrong count would read past it, or reserve
/// gigabytes, before any per-argument check).
std::vector<rt::Arg> toArgs(const st_arg *args, int count, const char *what,
                            const std::string &kernel,
                            const std::vector<KernelParam> &params) {
  require(count >= 0 && size_t(count) == params.size(),
          std::string(what) + ": num_args is " + std::to_string(count) +
              " but kernel '" + kernel + "' takes " +
              std::to_string(params.size()) + " arguments");
  require(count == 0 || args, std::string(what) + ": null arguments");
  std::vector<rt::Arg> v;
  v.reserve(size_t(count));
  for (int i = 0; i < count; ++i)
    v.push_back(toArg(args[i], i));
  return v;
}

/// The constants of each kernel handed out (st_kernel_constant): a JIT
/// handle stands for one source, kernel and set of given constants, so its
/// values are computed once, at its first st_kernel_get.
struct KernelConstantTable {
  std::mutex mutex;
  std::map<const rt::Kernel *, std::vector<ConstantValue>> values;
};

KernelConstantTable &kernelConstantTable() {
  static KernelConstantTable *table = new KernelConstantTable; // never freed
  return *table;
}

void rememberConstants(const rt::Kernel &k, const char *source,
                       const std::string &filename,
                       const rt::Constants &given) {
  KernelConstantTable &table = kernelConstantTable();
  {
    std::lock_guard<std::mutex> lock(table.mutex);
    if (table.values.count(&k))
      return;
  }
  std::vector<ConstantValue> values;
  std::string diagnostics;
  if (!kernelConstants(source, filename, k.name(), given, values, diagnostics))
    throw rt::CompileError(diagnostics); // JIT::get parsed it: not expected
  std::lock_guard<std::mutex> lock(table.mutex);
  table.values.emplace(&k, std::move(values));
}

const std::vector<ConstantValue> &constantsOf(st_kernel *k) {
  const rt::Kernel *kernel = &kernelOf(k);
  KernelConstantTable &table = kernelConstantTable();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto it = table.values.find(kernel);
  require(it != table.values.end(),
          "st_kernel_constant: not a kernel from st_kernel_get");
  return it->second; // entries are never erased: the reference stays valid
}

} // namespace

extern "C" {

int st_abi_version(void) { return ST_ABI_VERSION; }
const char *st_version(void) { return sparsetile::version(); }
const char *st_last_error(void) { return lastError.c_str(); }
void st_free(void *p) { std::free(p); }

int st_gpu_available(const char **why) {
  static thread_local std::string reason;
  bool ok = rt::gpuAvailable(&reason);
  if (why)
    *why = reason.c_str();
  return ok;
}

st_status st_kernel_get(const char *source, const char *filename,
                        const char *name, const char *const *const_names,
                        const char *const *const_values, int num_constants,
                        const st_options *options, st_kernel **out) {
  return guarded([&] {
    require(source && out, "st_kernel_get: null source or out");
    // The KernelSource hashes the text once; the JIT keys its handle table
    // on that digest, so repeated calls return the same kernel.
    rt::KernelSource src = rt::KernelSource::fromText(
        source, filename && *filename ? filename : "<source>");
    rt::Constants constants =
        toConstants(const_names, const_values, num_constants);
    rt::Kernel &k =
        rt::JIT::global().get(src, str(name), constants, toJITOptions(options));
    rememberConstants(k, source, src.filename(), constants);
    *out = reinterpret_cast<st_kernel *>(&k);
  });
}

st_status st_autotuned_get(const char *source, const char *filename,
                           const char *name, const char *const *const_names,
                           const char *const *const_values, int num_constants,
                           const st_options *options, st_autotuned **out) {
  return guarded([&] {
    require(source && out, "st_autotuned_get: null source or out");
    rt::KernelSource src = rt::KernelSource::fromText(
        source, filename && *filename ? filename : "<source>");
    rt::AutotunedKernel *k = rt::JIT::global().getAutotuned(
        src, str(name), toConstants(const_names, const_values, num_constants),
        toJITOptions(options));
    *out = reinterpret_cast<st_autotuned *>(k);
  });
}

st_status st_autotuned_launch(st_autotuned *k, void *stream, const st_arg *args,
                              int num_args) {
  return guarded([&] {
    rt::AutotunedKernel &a = autotunedOf(k);
    std::vector<rt::Arg> v =
        toArgs(args, num_args, "st_autotuned_launch", a.name(), a.params());
    a.launch(v, toStream(stream));
  });
}

st_status st_autotuned_choice(st_autotuned *k, void *stream, const st_arg *args,
                              int num_args, int *index, const char **config) {
  return guarded([&] {
    static thread_local std::string text;
    rt::AutotunedKernel &a = autotunedOf(k);
    std::vector<rt::Arg> v =
        toArgs(args, num_args, "st_autotuned_choice", a.name(), a.params());
    size_t i = a.choose(v, toStream(stream));
    text = a.spec().configs[i].describe();
    if (index)
      *index = int(i);
    if (config)
      *config = text.c_str();
  });
}

st_status st_autotuned_launch_config(st_autotuned *k, int index,
                                     const unsigned grid[3], void *stream,
                                     const st_arg *args, int num_args) {
  return guarded([&] {
    require(grid != nullptr, "st_autotuned_launch_config: null grid");
    rt::AutotunedKernel &a = autotunedOf(k);
    require(index >= 0 && size_t(index) < a.spec().configs.size(),
            "st_autotuned_launch_config: configuration " +
                std::to_string(index) + " of " +
                std::to_string(a.spec().configs.size()));
    std::vector<rt::Arg> v = toArgs(args, num_args,
                                    "st_autotuned_launch_config", a.name(),
                                    a.params());
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
      return;
    a.candidate(size_t(index))
        .launch(rt::LaunchConfig(rt::Dim3(grid[0], grid[1], grid[2]),
                                 rt::Dim3(0, 1, 1), 0, toStream(stream)),
                v);
  });
}

st_status st_kernel_name(st_kernel *k, const char **name) {
  return guarded([&] {
    require(name != nullptr, "st_kernel_name: null out");
    *name = kernelOf(k).name().c_str();
  });
}

st_status st_kernel_num_params(st_kernel *k, int *count) {
  return guarded([&] {
    require(count != nullptr, "st_kernel_num_params: null out");
    *count = int(kernelOf(k).params().size());
  });
}

st_status st_kernel_param(st_kernel *k, int i, const char **name,
                          int *is_pointer, int *is_descriptor, int *dtype) {
  return guarded([&] {
    const auto &params = kernelOf(k).params();
    require(i >= 0 && size_t(i) < params.size(),
            "st_kernel_param: index " + std::to_string(i) + " out of range");
    const KernelParam &p = params[size_t(i)];
    if (name)
      *name = p.name.c_str();
    if (is_pointer)
      *is_pointer = p.isPointer;
    if (is_descriptor)
      *is_descriptor = p.isDescriptor;
    if (dtype)
      *dtype = int(p.dtype);
  });
}

st_status st_kernel_num_constants(st_kernel *k, int *count) {
  return guarded([&] {
    require(count != nullptr, "st_kernel_num_constants: null out");
    *count = int(constantsOf(k).size());
  });
}

st_status st_kernel_constant(st_kernel *k, int i, const char **name, int *dtype,
                             int *is_type, const char **value) {
  return guarded([&] {
    const std::vector<ConstantValue> &constants = constantsOf(k);
    require(i >= 0 && size_t(i) < constants.size(),
            "st_kernel_constant: index " + std::to_string(i) + " out of range");
    const ConstantValue &c = constants[size_t(i)];
    if (name)
      *name = c.name.c_str();
    if (dtype)
      *dtype = c.isType && !c.known ? -1 : int(c.dtype);
    if (is_type)
      *is_type = c.isType;
    if (value)
      *value = c.known ? c.value.c_str() : nullptr;
  });
}

st_status st_kernel_launch(st_kernel *k, const unsigned grid[3],
                           const unsigned block[3],
                           unsigned dynamic_shared_bytes, void *stream,
                           const st_arg *args, int num_args) {
  return guarded([&] {
    require(grid != nullptr, "st_kernel_launch: null grid");
    rt::Kernel &kernel = kernelOf(k);
    std::vector<rt::Arg> v = toArgs(args, num_args, "st_kernel_launch",
                                    kernel.name(), kernel.params());
    rt::LaunchConfig c(rt::Dim3(grid[0], grid[1], grid[2]),
                       block ? rt::Dim3(block[0], block[1], block[2])
                             : rt::Dim3(0, 1, 1),
                       dynamic_shared_bytes, toStream(stream));
    kernel.launch(c, v);
  });
}

st_status st_compile_stage(const char *source, const char *filename,
                           const char *name, const char *const *const_names,
                           const char *const *const_values, int num_constants,
                           const st_options *options, const char *const *div16,
                           int num_div16, const char *stage, char **text) {
  return guarded([&] {
    require(source && text, "st_compile_stage: null source or out");
    if (str(stage) == "remarks") {
      // The JIT's own compile (cached, with ptxas's spills when nvJitLink
      // assembled it): the remarks' texts, one after the other.
      rt::Artifacts a = rt::JIT::global().inspect(
          rt::KernelSource::fromText(
              source, filename && *filename ? filename : "<source>"),
          str(name), toConstants(const_names, const_values, num_constants),
          toJITOptions(options), toNames(div16, num_div16));
      std::string all;
      for (const Remark &r : a.kernel.remarks)
        all += r.text;
      *text = copyOut(all);
      return;
    }
    Stage s;
    require(stage && parseStage(stage, s),
            "st_compile_stage: unknown stage '" + str(stage) +
                "'; use ast, tile, pipelined, layouts, mlir, llvm, ptx or remarks");
    rt::JITOptions j = toJITOptions(options);
    CompileOptions co;
    static_cast<CodegenOptions &>(co) = j;
    rt::applyEnvironmentOptions(co); // As the JIT's compiles.
    co.arch = archFor(j);
    co.constants = toConstants(const_names, const_values, num_constants);
    co.divisibleBy16 = toNames(div16, num_div16);
    std::string file = filename && *filename ? filename : "<source>";
    CompileResult r = compile(source, file, str(name), co, s);
    if (!r.ok)
      throw rt::CompileError(r.diagnostics);
    *text = copyOut(r.text);
  });
}

st_status st_compile_artifacts(const char *source, const char *filename,
                               const char *name, const char *const *const_names,
                               const char *const *const_values,
                               int num_constants, const st_options *options,
                               const char *const *div16, int num_div16,
                               char **ptx, char **cubin, size_t *cubin_size) {
  return guarded([&] {
    require(source != nullptr, "st_compile_artifacts: null source");
    rt::KernelSource src = rt::KernelSource::fromText(
        source, filename && *filename ? filename : "<source>");
    rt::Artifacts a = rt::JIT::global().inspect(
        src, str(name), toConstants(const_names, const_values, num_constants),
        toJITOptions(options), toNames(div16, num_div16));
    char *p = ptx ? copyOut(a.kernel.ptx) : nullptr;
    char *c = nullptr;
    if (cubin) {
      try {
        c = copyOut(a.cubin);
      } catch (...) {
        std::free(p);
        throw;
      }
    }
    if (ptx)
      *ptx = p;
    if (cubin)
      *cubin = c;
    if (cubin_size)
      *cubin_size = a.cubin.size();
  });
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

void st_random_randint4x(uint64_t seed, uint64_t offset, uint32_t out[4]) {
  std::array<uint32_t, 4> w = rt::randint4x(seed, offset);
  std::copy(w.begin(), w.end(), out);
}

float st_random_rand(uint64_t seed, uint64_t offset) {
  return rt::rand(seed, offset);
}

float st_random_randn(uint64_t seed, uint64_t offset) {
  return rt::randn(seed, offset);
}

int64_t st_sparsedrop_mask_words(int64_t M, int64_t K, int64_t block_m,
                                 int64_t block_k) {
  // Checked here because ops::sparsedrop::maskWords rounds up with M +
  // block_m - 1 and multiplies, both of which can overflow.
  if (M < 0 || K < 0 || block_m <= 0 || block_k <= 0) {
    lastError = "st_sparsedrop_mask_words: M = " + std::to_string(M) +
                ", K = " + std::to_string(K) + ", block_m = " +
                std::to_string(block_m) + ", block_k = " +
                std::to_string(block_k) +
                ": M and K must be >= 0 and the blocks > 0";
    return -1;
  }
  auto ceilDiv = [](int64_t a, int64_t b) { return a / b + (a % b != 0); };
  int64_t words;
  if (__builtin_mul_overflow(ceilDiv(M, block_m),
                             ceilDiv(ceilDiv(K, block_k), 64), &words)) {
    lastError = "st_sparsedrop_mask_words: the mask of M = " +
                std::to_string(M) + ", K = " + std::to_string(K) +
                " has more than INT64_MAX words";
    return -1;
  }
  lastError.clear();
  return words;
}

st_status st_sparsedrop_generate_mask(uint64_t seed, int64_t offset, double p,
                                      int64_t M, int64_t K, int64_t block_m,
                                      int64_t block_k, uint64_t mask_out,
                                      void *stream) {
  return guarded([&] {
    ops::sparsedrop::generateMask(seed, offset, p, M, K, block_m, block_k,
                                  mask_out, toStream(stream));
  });
}

st_status st_sparsedrop_generate_mask_at(uint64_t seed, uint64_t offset_at,
                                         int64_t base, double p, int64_t M,
                                         int64_t K, int64_t block_m,
                                         int64_t block_k, uint64_t mask_out,
                                         void *stream) {
  return guarded([&] {
    ops::sparsedrop::generateMaskAt(seed, offset_at, base, p, M, K, block_m,
                                    block_k, mask_out, toStream(stream));
  });
}

st_status st_sparsedrop_forward(const st_sparsedrop_problem *p, uint64_t X,
                                int64_t stride_x, uint64_t W, int64_t stride_w,
                                uint64_t mask, uint64_t Y, int64_t stride_y,
                                void *stream) {
  return guarded([&] {
    ops::sparsedrop::forward(toProblem(p), X, stride_x, W, stride_w, mask, Y,
                             stride_y, toStream(stream));
  });
}

st_status st_sparsedrop_backward_x(const st_sparsedrop_problem *p, uint64_t dY,
                                   int64_t stride_dy, uint64_t W,
                                   int64_t stride_w, uint64_t mask, uint64_t dX,
                                   int64_t stride_dx, void *stream) {
  return guarded([&] {
    ops::sparsedrop::backwardX(toProblem(p), dY, stride_dy, W, stride_w, mask,
                               dX, stride_dx, toStream(stream));
  });
}

st_status st_sparsedrop_backward_w(const st_sparsedrop_problem *p, uint64_t dY,
                                   int64_t stride_dy, uint64_t X,
                                   int64_t stride_x, uint64_t mask, uint64_t dW,
                                   int64_t stride_dw, void *stream) {
  return guarded([&] {
    ops::sparsedrop::backwardW(toProblem(p), dY, stride_dy, X, stride_x, mask,
                               dW, stride_dw, toStream(stream));
  });
}

st_status st_mask24_transposable(int dtype, int64_t R, int64_t C, uint64_t w,
                                 int64_t stride_w, uint64_t mask,
                                 int64_t stride_mask, uint64_t out,
                                 int64_t stride_out, void *stream) {
  return guarded([&] {
    ops::mask24Transposable(toDType(dtype, "mask24_transposable"), R, C, w,
                            stride_w, mask, stride_mask, out, stride_out,
                            toStream(stream));
  });
}

st_status st_mask24_rowwise(int dtype, int64_t R, int64_t C, uint64_t w,
                            int64_t stride_w, uint64_t mask,
                            int64_t stride_mask, uint64_t out,
                            int64_t stride_out, void *stream) {
  return guarded([&] {
    ops::mask24Rowwise(toDType(dtype, "mask24_rowwise"), R, C, w, stride_w,
                       mask, stride_mask, out, stride_out, toStream(stream));
  });
}

st_status st_mask_flip_count(uint64_t a, uint64_t b, int64_t n, void *stream,
                             int64_t *count) {
  return guarded([&] {
    require(count != nullptr, "mask_flip_count: null out");
    *count = ops::maskFlipCount(a, b, n, toStream(stream));
  });
}

st_status st_masked_decay(int dtype, uint64_t g, uint64_t w, uint64_t mask,
                          int64_t n, float lambda, void *stream) {
  return guarded([&] {
    ops::maskedDecay(toDType(dtype, "masked_decay"), g, w, mask, n, lambda,
                     toStream(stream));
  });
}

st_status st_mvue24(int dtype, uint64_t x, uint64_t y, int64_t n, uint64_t seed,
                    int64_t offset, void *stream) {
  return guarded([&] {
    ops::mvue24(toDType(dtype, "mvue24"), x, y, n, seed, offset,
                toStream(stream));
  });
}

st_status st_compress24(int dtype, int64_t R, int64_t C, uint64_t w,
                        int64_t stride_w, uint64_t mask, int64_t stride_mask,
                        uint64_t vals, uint64_t meta, uint64_t vals_t,
                        uint64_t meta_t, void *stream) {
  return guarded([&] {
    ops::compress24(toDType(dtype, "compress24"), R, C, w, stride_w, mask,
                    stride_mask, vals, meta, vals_t, meta_t, toStream(stream));
  });
}

st_status st_sparse24_linear_forward(int dtype, int64_t M, int64_t R, int64_t C,
                                     uint64_t vals, uint64_t meta, uint64_t x,
                                     int64_t ldx, uint64_t y, int64_t ldy,
                                     void *stream) {
  return guarded([&] {
    ops::sparse24LinearForward(toDType(dtype, "sparse24_linear_forward"), M, R,
                               C, vals, meta, x, ldx, y, ldy, toStream(stream));
  });
}

st_status st_sparse24_linear_backward_x(int dtype, int64_t M, int64_t R,
                                        int64_t C, uint64_t vals_t,
                                        uint64_t meta_t, uint64_t dy,
                                        int64_t lddy, uint64_t dx, int64_t lddx,
                                        void *stream) {
  return guarded([&] {
    ops::sparse24LinearBackwardX(toDType(dtype, "sparse24_linear_backward_x"),
                                 M, R, C, vals_t, meta_t, dy, lddy, dx, lddx,
                                 toStream(stream));
  });
}

st_status st_sparse24_linear_forward_act(int dtype, int64_t M, int64_t R,
                                         int64_t C, uint64_t vals,
                                         uint64_t meta, uint64_t x, int64_t ldx,
                                         uint64_t bias, int act, uint64_t h,
                                         uint64_t y, int64_t ldy,
                                         void *stream) {
  return guarded([&] {
    ops::sparse24LinearForwardAct(
        toDType(dtype, "sparse24_linear_forward_act"), M, R, C, vals, meta, x,
        ldx, bias, ops::LinearActivation(act), h, y, ldy, toStream(stream));
  });
}

st_status st_sparse24_linear_backward_x_act(int dtype, int64_t M, int64_t R,
                                            int64_t C, uint64_t vals_t,
                                            uint64_t meta_t, uint64_t dy,
                                            int64_t lddy, int act, uint64_t h,
                                            uint64_t dx, int64_t lddx,
                                            void *stream) {
  return guarded([&] {
    ops::sparse24LinearBackwardXAct(
        toDType(dtype, "sparse24_linear_backward_x_act"), M, R, C, vals_t,
        meta_t, dy, lddy, ops::LinearActivation(act), h, dx, lddx,
        toStream(stream));
  });
}

st_status st_mask24_update(int dtype, int64_t R, int64_t C, uint64_t w,
                           int64_t stride_w, uint64_t mask,
                           int64_t stride_mask, uint64_t out,
                           int64_t stride_out, uint64_t vals, uint64_t meta,
                           uint64_t vals_t, uint64_t meta_t, void *stream) {
  return guarded([&] {
    ops::mask24Update(toDType(dtype, "mask24_update"), R, C, w, stride_w, mask,
                      stride_mask, out, stride_out, vals, meta, vals_t, meta_t,
                      toStream(stream));
  });
}

st_status st_mvue24_compress_t(int dtype, int64_t M, int64_t R, uint64_t dy,
                               int64_t lddy, uint64_t vals, uint64_t meta,
                               uint64_t seed, int64_t offset, void *stream) {
  return guarded([&] {
    ops::mvue24CompressT(toDType(dtype, "mvue24_compress_t"), M, R, dy, lddy,
                         vals, meta, seed, offset, toStream(stream));
  });
}

st_status st_sparse24_linear_backward_w(int dtype, int64_t M, int64_t R,
                                        int64_t C, uint64_t vals,
                                        uint64_t meta, uint64_t x, int64_t ldx,
                                        uint64_t dw, int64_t lddw,
                                        void *stream) {
  return guarded([&] {
    ops::sparse24LinearBackwardW(toDType(dtype, "sparse24_linear_backward_w"),
                                 M, R, C, vals, meta, x, ldx, dw, lddw,
                                 toStream(stream));
  });
}

st_status st_sparse24_linear_backward_w_ex(int dtype, int64_t M, int64_t R,
                                           int64_t C, uint64_t vals,
                                           uint64_t meta, uint64_t x,
                                           int64_t ldx, uint64_t dw,
                                           int dw_dtype, int64_t lddw,
                                           void *stream) {
  return guarded([&] {
    const char *op = "sparse24_linear_backward_w_ex";
    ops::sparse24LinearBackwardW(toDType(dtype, op), M, R, C, vals, meta, x,
                                 ldx, dw, lddw, toStream(stream), {},
                                 toDType(dw_dtype, op));
  });
}

st_status st_sparse_linear(int dtype, int64_t M, int64_t I, int64_t K,
                           uint64_t vals, uint64_t meta, uint64_t x,
                           int64_t ldx, uint64_t out, int64_t ldo, void *stream,
                           const st_sparse_linear_tiles *tiles) {
  return guarded([&] {
    ops::SparseLinearTiles t;
    if (tiles) {
      t.tileI = tiles->tile_i;
      t.tileM = tiles->tile_m;
      t.warps = tiles->warps;
      t.prefetch = tiles->prefetch != 0;
      t.tma = tiles->tma;
      t.stages = tiles->stages;
      t.warpSpecialize = tiles->warp_specialize;
      t.persistent = tiles->persistent;
    }
    ops::sparseLinear(toDType(dtype, "sparse_linear"), M, I, K, vals, meta, x,
                      ldx, out, ldo, toStream(stream), t);
  });
}

int64_t st_compressed24_meta(int64_t rows, int64_t cols) {
  // Not ops::compressedMeta: its cols + 127 and product can overflow.
  if (rows < 0 || cols < 0) {
    lastError = "st_compressed24_meta: rows = " + std::to_string(rows) +
                ", cols = " + std::to_string(cols) + " must be >= 0";
    return -1;
  }
  int64_t words;
  if (__builtin_mul_overflow(rows, (cols / 128 + (cols % 128 != 0)) * 8,
                             &words)) {
    lastError =
        "st_compressed24_meta: the metadata of rows = " + std::to_string(rows) +
        ", cols = " + std::to_string(cols) + " has more than INT64_MAX words";
    return -1;
  }
  lastError.clear();
  return words;
}

int64_t st_mask_flip_partials(int64_t n) {
  // Not ops::maskFlipPartials: its n + 4095 overflows near INT64_MAX.
  if (n < 0) {
    lastError = "st_mask_flip_partials: n = " + std::to_string(n) +
                " is negative";
    return -1;
  }
  lastError.clear();
  return n / ops::kFlipBlock + (n % ops::kFlipBlock != 0);
}

st_status st_mask_flip_count_partials(uint64_t a, uint64_t b, int64_t n,
                                      uint64_t partials, void *stream) {
  return guarded([&] {
    ops::maskFlipCountPartials(a, b, n, partials, toStream(stream));
  });
}

st_status st_glu_forward(const st_glu_problem *p, uint64_t h, int64_t stride_h,
                         uint64_t y, int64_t stride_y, void *stream) {
  return guarded([&] {
    ops::gluForward(toGlu(p), h, stride_h, y, stride_y, toStream(stream));
  });
}

st_status st_glu_backward(const st_glu_problem *p, uint64_t h, int64_t stride_h,
                          uint64_t dy, int64_t stride_dy, uint64_t dh,
                          int64_t stride_dh, void *stream) {
  return guarded([&] {
    ops::gluBackward(toGlu(p), h, stride_h, dy, stride_dy, dh, stride_dh,
                     toStream(stream));
  });
}

st_status st_set_allocator(st_alloc_fn alloc, st_release_fn release,
                           void *ctx, int only_while_capturing) {
  return guarded([&] {
    if (alloc && !release)
      throw rt::Error("st_set_allocator: an alloc function needs a release "
                      "function");
    rt::ScratchAllocator a;
    if (alloc) {
      // The C types differ from the C++ ones only in spelling (uint64_t
      // pointers, void * streams): adapt through a context that keeps the
      // C functions. Never freed: a Scratch taken before a later call gives
      // its memory back through the functions it was taken from.
      struct C {
        st_alloc_fn alloc;
        st_release_fn release;
        void *ctx;
      };
      a.ctx = new C{alloc, release, ctx};
      a.alloc = [](size_t bytes, CUstream_st *s, void *c) -> rt::DevicePtr {
        auto *f = static_cast<C *>(c);
        return f->alloc(bytes, s, f->ctx);
      };
      a.free = [](rt::DevicePtr p, size_t bytes, CUstream_st *s, void *c) {
        auto *f = static_cast<C *>(c);
        f->release(p, bytes, s, f->ctx);
      };
      a.onlyWhileCapturing = only_while_capturing != 0;
    }
    rt::setScratchAllocator(a);
  });
}

st_status st_launch_memory_stats(int64_t out[4]) {
  return guarded([&] {
    if (!out)
      throw rt::Error("st_launch_memory_stats: out is NULL");
    rt::LaunchMemoryStats s = rt::launchMemoryStats();
    out[0] = int64_t(s.descriptorBlocks);
    out[1] = int64_t(s.descriptorUploads);
    out[2] = int64_t(s.capturedUploads);
    out[3] = int64_t(s.tileQueues);
  });
}

st_status st_set_log_callback(st_log_fn fn, void *ctx, int level) {
  return guarded([&] {
    if (level < 0 || level > 2)
      throw rt::Error("st_set_log_callback: level must be 0 (off), 1 (info) "
                      "or 2 (debug), got " +
                      std::to_string(level));
    rt::setLogSink(fn, ctx, rt::LogLevel(level));
  });
}

} // extern "C"
