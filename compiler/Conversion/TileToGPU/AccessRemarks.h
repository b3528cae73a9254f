//===- AccessRemarks.h - Why a global access is narrow ----------*- C++ -*-===//
//
// The distribution pass picks each load's and store's access width from
// AxisInfo (Memory.cpp: accessWidth). When the width falls short of what
// the thread's run of elements allows, remarkNarrowAccess walks the address
// (and mask) back to the value that lost the fact, and emits a
// `scalar-access` performance remark when the cause is something the
// kernel's author can fix (an unknown divisibility, a `%` AxisInfo cannot
// follow, a loop-carried pointer). Strided and gathered accesses, where
// narrow accesses are the best there is, stay silent (Language.md,
// "Performance remarks").
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_CONVERSION_TILETOGPU_ACCESSREMARKS_H
#define SPARSETILE_CONVERSION_TILETOGPU_ACCESSREMARKS_H

#include "Conversion/AxisInfo.h"

namespace sparsetile {

/// `site` (a tile.load or tile.store) accesses `ptr` under `mask` (may be
/// null) in runs of `run` elements of `bytes` bytes per thread, and was
/// given accesses of `width` elements.
void remarkNarrowAccess(const AxisInfoAnalysis &axis, mlir::Operation *site,
                        mlir::Value ptr, mlir::Value mask, int64_t run,
                        int64_t bytes, int64_t width);

} // namespace sparsetile

#endif // SPARSETILE_CONVERSION_TILETOGPU_ACCESSREMARKS_H
