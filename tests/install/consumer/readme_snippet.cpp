// The C++ snippet of the README ("Using the runtime from C++"), as written
// there but for the example's path; main.cpp runs it when there is a GPU.
#include "sparsetile/runtime/JIT.h"

#include <string>

using namespace sparsetile::rt;

void readmeSnippet(DevicePtr x, DevicePtr y, DevicePtr out, int n) {
  auto src = KernelSource::fromFile(std::string(SPARSETILE_EXAMPLES_DIR) +
                                    "/vector_add.tile");
  Kernel &k = JIT::global().get(src, "vector_add", {{"BLOCK", "1024"}});
  k.launch(Dim3((n + 1023) / 1024), {Arg::ptr(x, DType::F32), Arg::ptr(y, DType::F32),
                                     Arg::ptr(out, DType::F32), Arg::i32(n)});
}
