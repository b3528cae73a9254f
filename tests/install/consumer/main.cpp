// Compiles a kernel to PTX through the installed compiler; with a GPU, also
// JIT-compiles and launches it and checks the result. Prints "consumer: ok".
#include "sparsetile/Compiler.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/JIT.h"

#include <cstdio>
#include <string>
#include <vector>

static const char *kSource = R"(
@num_warps(4)
kernel scale(x: *f32, out: *f32, n: i32, a: f32, const BLOCK: i32 = 256) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = offs < n;
  store(out + offs, load(x + offs, mask=m, other=0.0) * a, mask=m);
}
)";

void readmeSnippet(sparsetile::rt::DevicePtr x, sparsetile::rt::DevicePtr y,
                   sparsetile::rt::DevicePtr out, int n); // readme_snippet.cpp

int main() {
  using namespace sparsetile;
  CompileResult r = compile(kSource, "scale.tile", "scale", CompileOptions());
  if (!r.ok || r.text.find(".entry scale") == std::string::npos) {
    std::fprintf(stderr, "consumer: compile failed\n%s", r.diagnostics.c_str());
    return 1;
  }
  std::string why;
  if (!rt::gpuAvailable(&why)) {
    std::printf("consumer: ok (PTX only: %zu bytes; no GPU)\n", r.text.size());
    return 0;
  }
  try {
    static const rt::KernelSource src =
        rt::KernelSource::fromText(kSource, "scale.tile");
    rt::Kernel &k = rt::JIT::global().get(src, "scale");
    const int n = 1000;
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i)
      x[i] = float(i) - 300.5f;
    rt::DeviceBuffer dx = rt::DeviceBuffer::fromHost(x), dout(n * 4);
    dout.fill(0xFF);
    k.launch(rt::Dim3((n + 255) / 256),
             {rt::Arg::ptr(dx.ptr(), DType::F32),
              rt::Arg::ptr(dout.ptr(), DType::F32), rt::Arg::i32(n),
              rt::Arg::f32(2.0f)});
    rt::Device::get().synchronize();
    std::vector<float> out = dout.toHost<float>();
    for (int i = 0; i < n; ++i)
      if (out[i] != 2.0f * x[i]) {
        std::fprintf(stderr, "consumer: out[%d] = %g, want %g\n", i, out[i],
                     2.0f * x[i]);
        return 1;
      }
    // The README's snippet: out = x + y.
    rt::DeviceBuffer dy = rt::DeviceBuffer::fromHost(x), dsum(n * 4);
    dsum.fill(0xFF);
    readmeSnippet(dx.ptr(), dy.ptr(), dsum.ptr(), n);
    rt::Device::get().synchronize();
    std::vector<float> sum = dsum.toHost<float>();
    for (int i = 0; i < n; ++i)
      if (sum[i] != 2.0f * x[i]) {
        std::fprintf(stderr, "consumer: README snippet: out[%d] = %g, want "
                     "%g\n", i, sum[i], 2.0f * x[i]);
        return 1;
      }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  std::printf("consumer: ok (PTX and a launch on the GPU)\n");
  return 0;
}
