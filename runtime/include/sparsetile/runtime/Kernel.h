//===- Kernel.h - Loaded modules, typed arguments, launches -----*- C++ -*-===//
//
// A `Kernel` is a launchable function plus the `CompiledKernel` signature the
// compiler (or an NVRTC caller) declared for it. Every launch checks its
// arguments against that signature first (count, pointer vs scalar, scalar
// type, pointee type when known, 16-byte pointer alignment, and the
// divisibility the variant was compiled for), because a wrong argument to a
// GPU kernel otherwise shows up as silent garbage or a sticky context error.
// Nothing is launched when a check fails.
//
// A kernel from the JIT is *specializing*: integer arguments that are
// multiples of 16, and those equal to 1, select a variant compiled with that
// knowledge (like Triton's divisibility and equal_to_1 specialization). The
// variant is picked per launch from a bitmask of the integer arguments.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_KERNEL_H
#define SPARSETILE_RUNTIME_KERNEL_H

#include "sparsetile/Compiler.h"
#include "sparsetile/runtime/Driver.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sparsetile {
namespace rt {

/// The compiler's element types, also under rt:: so that code written with
/// `using namespace sparsetile::rt;` (the README's) names them as DType::F32.
using sparsetile::DType;

/// The element dtype a C++ type maps to, for typed pointer arguments.
/// Types without a mapping (void, uint16_t which could be f16/bf16/i16/u16,
/// structs) give untyped pointers whose pointee is not checked. Unsigned C++
/// types map to the signed dtypes of their width (as before u8 ... u64
/// existed); argTypeMatches lets them point at `*u32` parameters too.
template <typename T> struct DTypeOf { static constexpr bool known = false; };
#define SPARSETILE_DTYPE_OF(CT, DT)                                            \
  template <> struct DTypeOf<CT> {                                             \
    static constexpr bool known = true;                                        \
    static constexpr DType value = DType::DT;                                  \
  };
SPARSETILE_DTYPE_OF(bool, I1)
SPARSETILE_DTYPE_OF(int8_t, I8)
SPARSETILE_DTYPE_OF(uint8_t, I8)
SPARSETILE_DTYPE_OF(int16_t, I16)
SPARSETILE_DTYPE_OF(int32_t, I32)
SPARSETILE_DTYPE_OF(uint32_t, I32)
SPARSETILE_DTYPE_OF(int64_t, I64)
SPARSETILE_DTYPE_OF(uint64_t, I64)
SPARSETILE_DTYPE_OF(float, F32)
SPARSETILE_DTYPE_OF(double, F64)
#undef SPARSETILE_DTYPE_OF

/// Whether an argument of dtype `arg` may be passed for a parameter (or
/// pointee) of dtype `param`: the same type, or integers of one width that
/// differ only in signedness (the bits are passed as they are: -1 given for a
/// u32 parameter arrives as 0xffffffff). Signedness is how the kernel reads
/// the bits, not a property of the storage.
inline bool argTypeMatches(DType param, DType arg) {
  return param == arg || (dtypeIsInteger(param) && dtypeIsInteger(arg) &&
                          dtypeSize(param) == dtypeSize(arg));
}

/// One kernel argument with its type. Implicit conversions cover the common
/// cases: `k.launch(grid, {xPtr, outBuf, n, 0.5f})` where xPtr is a `float*`
/// device pointer, outBuf a DeviceBuffer (untyped), n an int. Use the named
/// factories for the rest: `Arg::ptr(devicePtr, DType::BF16)`,
/// `Arg::i64(n)`, `Arg::bf16Bits(0x3f80)`.
class Arg {
public:
  /// Integers: 1/2/4/8-byte integers become i8/i16/i32/i64 scalars, signed
  /// or not (argTypeMatches accepts them for u8 ... u64 parameters; use
  /// Arg::u32 etc. to say so). A raw DevicePtr is an integer too; wrap it
  /// with Arg::ptr to pass a pointer.
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                             int> = 0>
  Arg(T v) {
    constexpr DType t = sizeof(T) == 1   ? DType::I8
                        : sizeof(T) == 2 ? DType::I16
                        : sizeof(T) == 4 ? DType::I32
                                         : DType::I64;
    setScalar(t, static_cast<int64_t>(v), sizeof(T));
  }
  Arg(float v) { setScalar(DType::F32, v, sizeof(v)); }
  Arg(double v) { setScalar(DType::F64, v, sizeof(v)); }
  /// A device pointer typed by its C++ pointee (untyped for void etc.).
  template <typename T> Arg(T *p) {
    setPointer(reinterpret_cast<DevicePtr>(p));
    if constexpr (DTypeOf<std::remove_cv_t<T>>::known) {
      hasDType_ = true;
      dtype_ = DTypeOf<std::remove_cv_t<T>>::value;
    }
  }
  /// A buffer's address, untyped.
  Arg(const DeviceBuffer &b) { setPointer(b.ptr()); }

  static Arg i1(bool v) { return scalar(DType::I1, uint8_t(v)); }
  static Arg i8(int8_t v) { return scalar(DType::I8, v); }
  static Arg i16(int16_t v) { return scalar(DType::I16, v); }
  static Arg i32(int32_t v) { return scalar(DType::I32, v); }
  static Arg i64(int64_t v) { return scalar(DType::I64, v); }
  static Arg u8(uint8_t v) { return scalar(DType::U8, v); }
  static Arg u16(uint16_t v) { return scalar(DType::U16, v); }
  static Arg u32(uint32_t v) { return scalar(DType::U32, v); }
  static Arg u64(uint64_t v) { return scalar(DType::U64, v); }
  static Arg f32(float v) { return scalar(DType::F32, v); }
  static Arg f64(double v) { return scalar(DType::F64, v); }
  /// Half-precision scalars from their bit patterns.
  static Arg f16Bits(uint16_t bits) { return scalar(DType::F16, bits); }
  static Arg bf16Bits(uint16_t bits) { return scalar(DType::BF16, bits); }

  /// A pointer whose pointee type is checked against the parameter's.
  static Arg ptr(DevicePtr p, DType elementType) {
    Arg a;
    a.setPointer(p);
    a.hasDType_ = true;
    a.dtype_ = elementType;
    return a;
  }
  static Arg ptr(const DeviceBuffer &b, DType elementType) {
    return ptr(b.ptr(), elementType);
  }
  template <typename T> static Arg ptr(T *p) { return Arg(p); }
  /// A 2-D row-major tensor for a `desc<T>` parameter: rows x cols elements
  /// of `elementType` at `base`, consecutive rows `ld` elements apart. At
  /// launch the runtime turns it into the descriptor block the kernel reads
  /// (a TMA tensor map on sm_90 plus the plain fields), cached in device
  /// memory by content, so relaunching with the same tensors costs a lookup.
  static Arg tensor2d(DevicePtr base, DType elementType, int64_t rows,
                      int64_t cols, int64_t ld) {
    Arg a = ptr(base, elementType);
    a.isPointer_ = false;
    a.isTensor_ = true;
    a.rows_ = rows;
    a.cols_ = cols;
    a.ld_ = ld;
    return a;
  }
  /// A pointer whose pointee type is not checked.
  static Arg untypedPtr(DevicePtr p) {
    Arg a;
    a.setPointer(p);
    return a;
  }

  bool isPointer() const { return isPointer_; }
  /// An Arg::tensor2d: bits() is its base address, dtype() its element.
  bool isTensor() const { return isTensor_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t ld() const { return ld_; }
  /// For scalars: the scalar type. For pointers: the pointee, if hasDType().
  DType dtype() const { return dtype_; }
  bool hasDType() const { return isPointer_ ? hasDType_ : true; }

  /// The raw value bits, zero-extended (pointers: the address).
  uint64_t bits() const { return storage_; }
  /// Integer value for integer scalars: sign-extended for the signed types,
  /// zero-extended for u8 ... u32, the bit pattern for u64.
  int64_t intValue() const { return intValue_; }
  bool isInteger() const { return !isPointer_ && dtypeIsInteger(dtype_); }
  /// Address of the value as cuLaunchKernel wants it.
  void *storage() const { return const_cast<uint64_t *>(&storage_); }
  /// "i64 scalar 5", "pointer to f32 0x7f00...", for error messages.
  std::string describe() const;

private:
  Arg() = default;
  template <typename V> static Arg scalar(DType t, V v) {
    Arg a;
    a.setScalar(t, v, sizeof(V));
    return a;
  }
  template <typename V> void setScalar(DType t, V v, size_t size) {
    isPointer_ = false;
    dtype_ = t;
    storage_ = 0;
    if constexpr (std::is_integral_v<V>) {
      intValue_ = static_cast<int64_t>(v);
      std::memcpy(&storage_, &intValue_, size); // Little-endian truncation.
    } else {
      std::memcpy(&storage_, &v, sizeof(V));
    }
  }
  void setPointer(DevicePtr p) {
    isPointer_ = true;
    hasDType_ = false;
    storage_ = p;
    intValue_ = 0;
  }

  uint64_t storage_ = 0;
  int64_t intValue_ = 0;
  DType dtype_ = DType::I32;
  bool isPointer_ = false;
  bool hasDType_ = false;
  bool isTensor_ = false;
  int64_t rows_ = 0, cols_ = 0, ld_ = 0;
};

/// The device block a `desc<T>` parameter receives for tensor `a`, for a
/// launch on `stream` (built and cached on first use; LaunchMemory.cpp).
/// `capturing`: the stream is being captured into a graph. Throws Error.
DevicePtr descriptorBlock(const KernelParam &p, const Arg &a,
                          CUstream_st *stream = nullptr,
                          bool capturing = false);

/// Grid or block dimensions.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  Dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};

/// How to launch. `block.x == 0` (the default) takes the kernel's
/// numThreads as a 1-D block.
struct LaunchConfig {
  Dim3 grid;
  Dim3 block = Dim3(0, 1, 1);
  unsigned dynamicSharedBytes = 0;
  CUstream_st *stream = nullptr; ///< nullptr: the legacy default stream.

  LaunchConfig(Dim3 grid = Dim3(), Dim3 block = Dim3(0, 1, 1),
               unsigned dynamicSharedBytes = 0, CUstream_st *stream = nullptr)
      : grid(grid), block(block), dynamicSharedBytes(dynamicSharedBytes),
        stream(stream) {}
};

/// What one launch asks of the device.
struct LaunchNeeds {
  Dim3 grid, block;
  int staticSharedBytes = 0;
  unsigned dynamicSharedBytes = 0;
  int registersPerThread = 0; ///< From the loaded function; 0: unknown.
  /// The most threads per block the loaded function can run with (the
  /// driver lowers it when registers run short); 0: unknown.
  int maxThreadsForFunction = 0;
};

/// Throws Error naming kernel `name`, the limit and both numbers when
/// `needs` exceeds `limits` (threads or a dimension of the block, a grid
/// dimension, shared memory, registers), so nothing is launched that the
/// driver would refuse with a bare CUDA_ERROR_INVALID_VALUE. Needs no GPU.
void checkLaunchLimits(const std::string &name, const LaunchNeeds &needs,
                       const DeviceLimits &limits);

/// A loaded CUDA module; kept alive by the kernels that use it.
class Module {
public:
  /// JIT-compiles PTX in the driver. On failure the Error includes the
  /// driver's JIT error log.
  static std::shared_ptr<Module> fromPtx(const std::string &ptx);
  /// Loads a cubin (no JIT work; the warm path).
  static std::shared_ptr<Module> fromCubin(const std::string &cubin);
  ~Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// The function named `name`; throws if absent.
  CUfunc_st *function(const std::string &name) const;
  CUmod_st *handle() const { return module_; }

private:
  explicit Module(CUmod_st *m) : module_(m) {}
  CUmod_st *module_ = nullptr;
};

/// Checks `args` against the kernel's parameters; throws Error naming the
/// kernel and parameter on the first mismatch. Needs no GPU.
void checkArguments(const CompiledKernel &kernel, const Arg *args,
                    size_t count);

/// A launchable kernel. Either one loaded function (`Kernel(info, module)`)
/// or a specializing kernel whose variants are built on demand.
class Kernel {
public:
  /// Builds the variant for a specialization mask (bit j set: the j-th
  /// integer parameter is a multiple of 16 at this launch; bit 32 + j: it
  /// is 1).
  using VariantFactory = std::function<std::unique_ptr<Kernel>(uint64_t)>;

  /// Loads `info.name` from `module`.
  Kernel(CompiledKernel info, std::shared_ptr<Module> module);
  /// A specializing kernel with the declared parameters `params`. With
  /// `specialize` false every launch uses variant 0.
  Kernel(std::string name, std::vector<KernelParam> params,
         VariantFactory factory, bool specialize = true);

  /// Indices of the parameters that take part in divisibility
  /// specialization (i32/i64 scalars, at most 32); bit j of a mask stands for
  /// the j-th of them.
  static std::vector<int>
  specializableParams(const std::vector<KernelParam> &params);

  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;

  /// Checks the arguments, then launches. Asynchronous; launch errors are
  /// thrown, execution errors surface at the next synchronization.
  void launch(const LaunchConfig &config, const Arg *args, size_t count);
  void launch(const LaunchConfig &config, std::initializer_list<Arg> args) {
    launch(config, args.begin(), args.size());
  }
  void launch(const LaunchConfig &config, const std::vector<Arg> &args) {
    launch(config, args.data(), args.size());
  }
  void launch(Dim3 grid, std::initializer_list<Arg> args) {
    launch(LaunchConfig(grid), args.begin(), args.size());
  }

  const std::string &name() const { return name_; }
  /// The declared parameters (for a specializing kernel, without
  /// divisibility assumptions).
  const std::vector<KernelParam> &params() const { return params_; }
  bool isSpecializing() const { return static_cast<bool>(factory_); }

  /// The variant `launch` would use for these arguments (the kernel itself
  /// when it does not specialize). Compiles/loads it if needed.
  Kernel &variantFor(const Arg *args, size_t count);
  /// The variant for an explicit mask (builds it if needed).
  Kernel &variant(uint64_t mask);
  /// The specialization mask of a set of arguments: bit j when the j-th
  /// integer parameter is a multiple of 16, bit 32 + j when it is 1. Each
  /// argument has three states, but a kernel only builds the variants its
  /// launches ask for: a GEMM called with unit and 16-multiple strides
  /// builds one or two.
  uint64_t divisibilityMask(const Arg *args, size_t count) const;

  /// Only for a loaded (non-specializing) kernel.
  const CompiledKernel &info() const;
  CUfunc_st *function() const { return function_; }
  /// Block size a default launch uses.
  int numThreads() const { return info_.numThreads; }

private:
  std::string name_;
  std::vector<KernelParam> params_;
  // Loaded kernel.
  CompiledKernel info_;
  std::shared_ptr<Module> module_;
  CUfunc_st *function_ = nullptr;
  /// The dynamic shared memory the function is opted in to: the driver's
  /// default, 48 KB, until a launch asks for more.
  std::atomic<unsigned> maxDynamicShared_{unsigned(kStaticSharedMemoryLimit)};
  /// The loaded function's registers per thread, static shared bytes and
  /// most threads per block (-1 until first asked).
  std::atomic<int> numRegs_{-1}, staticShared_{-1}, maxThreads_{-1};
  /// Programs per SM a persistent kernel runs (0: not asked yet).
  std::atomic<int> occupancy_{0};
  // Specializing kernel.
  VariantFactory factory_;
  std::vector<int> intParams_; ///< Indices of integer scalar params.
  std::mutex variantsMutex_;
  std::vector<std::pair<uint64_t, std::unique_ptr<Kernel>>> variants_;
};

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_KERNEL_H
