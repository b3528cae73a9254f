//===- EmbeddedKernels.h - .tile sources compiled into the library -*- C++ -*-===//
//
// The ops library's kernels live in dsl_examples/ as ordinary .tile files;
// CMake embeds them (cmake/EmbedKernels.cmake) so launchers need no paths.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_OPS_EMBEDDEDKERNELS_H
#define SPARSETILE_OPS_EMBEDDEDKERNELS_H

#include <string>

namespace sparsetile::ops {

/// The text of an embedded .tile file by its base name; throws rt::Error if
/// there is none.
const std::string &embeddedKernel(const std::string &name);

} // namespace sparsetile::ops

#endif // SPARSETILE_OPS_EMBEDDEDKERNELS_H
