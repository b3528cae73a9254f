//===- TypeConverter.h - What a tile type becomes in one thread -*- C++ -*-===//
//
// The 1:N type conversion of convert-tile-to-gpu, in one place: a tile of
// type tensor<shape x T, #layout> becomes, in each thread, the elements its
// layout gives that thread (TileLayouts.h), each in T's register type, and
// crosses a region boundary (scf.for iter_args, scf.if results) as that many
// values, 16-bit elements two to a vector<2 x T>. Pointers and descriptors
// become global-memory pointers; scalars stay as they are.
//
// The lowering patterns (LoweringPatterns.h) hold every tile they produce in
// exactly elementsPerThread() values (the driver checks it after each op),
// the kernel's gpu.func takes convertType() of each argument, and scf.for /
// scf.if carry convertType() of each tile.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_CONVERSION_TILETOGPU_TYPECONVERTER_H
#define SPARSETILE_CONVERSION_TILETOGPU_TYPECONVERTER_H

#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace sparsetile {

class TileTypeConverter : public mlir::TypeConverter {
public:
  /// For a kernel whose tiles are spread over `numThreads` threads
  /// (kernelLayoutParams).
  TileTypeConverter(mlir::MLIRContext *ctx, int64_t numThreads);

  /// The elements one thread holds of a tile of type `t`; none when `t` has
  /// no layout or its layout does not fit its shape.
  std::optional<int64_t> elementsPerThread(mlir::Type t) const;

  /// The type one held element of a tile of element type `elt` has in a
  /// register: fp8 in i8 (LLVM has no fp8 type), others as they are.
  static mlir::Type registerType(mlir::Type elt);

  /// Whether a tile of type `t` crosses scf.for and scf.if in pairs, each a
  /// vector<2 x T> in one 32-bit register: 16-bit elements, an even count.
  bool carriedInPairs(mlir::Type t) const;
  /// The same for `n` elements a thread of element type `elt`.
  static bool carriedInPairs(mlir::Type elt, size_t n);

  int64_t numThreads() const { return threads; }

private:
  int64_t threads;
  mutable llvm::DenseMap<mlir::Type, std::optional<int64_t>> counts;
};

} // namespace sparsetile

#endif // SPARSETILE_CONVERSION_TILETOGPU_TYPECONVERTER_H
