//===- GatedBench.cpp - Effective bandwidth of fused SwiGLU/GEGLU ---------===//
//
// For each shape (M, F), times sparsetile's gated-activation forward and
// backward (bf16, halves layout) and a device-to-device copy in the same
// process, with CUDA events after warm-up, and prints medians as a markdown
// table. Effective bandwidth = (bytes read + bytes written) / time:
//   forward:  reads h [M, 2F], writes y [M, F]            = 6 M F bytes
//   backward: reads h [M, 2F] and dy [M, F], writes dh    = 10 M F bytes
// Inputs are random (never zeros); outputs are poisoned before timing.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/ops/GatedActivations.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"

#include "BenchUtil.h"

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

using namespace sparsetile;
using namespace sparsetile::ops;

using namespace sparsetile::bench;

int main(int argc, char **argv) {
  std::string why;
  if (!rt::gpuAvailable(&why)) {
    std::printf("gated bench skipped: no GPU (%s)\n", why.c_str());
    return 0;
  }
  rt::Device &dev = rt::Device::get();
  // Copy ceiling: 1 GiB device-to-device, read + write.
  CopyCeiling ceiling;
  double copyTBs = ceiling.tbs(size_t(1) << 30);

  std::printf("device: %s (%s)\n", dev.name().c_str(), dev.arch().c_str());
  std::printf("device-to-device copy: %.3f TB/s (1 GiB, median of 50)\n\n",
              copyTBs);
  std::printf("%% of copy: against the 1 GiB copy above. %% of same-size copy: "
              "against a copy moving the same bytes as the kernel (3 M F bytes "
              "copied for the forward, 5 M F for the backward), timed the same "
              "way, L2 flush included.\n\n");
  std::printf("| M | F | act | fwd ms | fwd TB/s | fwd %% of copy | fwd %% of "
              "same-size copy | bwd ms | bwd TB/s | bwd %% of copy | bwd %% of "
              "same-size copy |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");

  struct Shape {
    int64_t M, F;
  };
  std::mt19937 rng(1234);
  for (Shape s : {Shape{16384, 11008}, Shape{8192, 16384}, Shape{4096, 4096},
                  Shape{1, 11008}}) {
    auto h = rt::DeviceBuffer::fromHost(randomBf16(s.M * 2 * s.F, rng));
    auto dy = rt::DeviceBuffer::fromHost(randomBf16(s.M * s.F, rng));
    rt::DeviceBuffer y(s.M * s.F * 2), dh(s.M * 2 * s.F * 2);
    y.fill(0xff);
    dh.fill(0xff);
    for (Activation a : {Activation::SiLU, Activation::GELU}) {
      if (a == Activation::GELU && s.M != 16384)
        continue; // GEGLU at one shape: the bound is the same bytes.
      GluProblem p{DType::BF16, s.M, s.F, a, GluLayout::Halves, 64};
      double fwd = medianMs(
          [&] { gluForward(p, h.ptr(), 2 * s.F, y.ptr(), s.F); });
      double bwd = medianMs([&] {
        gluBackward(p, h.ptr(), 2 * s.F, dy.ptr(), s.F, dh.ptr(), 2 * s.F);
      });
      double fwdTBs = 6.0 * s.M * s.F / (fwd * 1e-3) / 1e12;
      double bwdTBs = 10.0 * s.M * s.F / (bwd * 1e-3) / 1e12;
      double fwdCopy = ceiling.tbs(size_t(3 * s.M * s.F));
      double bwdCopy = ceiling.tbs(size_t(5 * s.M * s.F));
      std::printf("| %lld | %lld | %s | %.4f | %.3f | %.0f%% | %.0f%% | %.4f | "
                  "%.3f | %.0f%% | %.0f%% |\n",
                  (long long)s.M, (long long)s.F,
                  a == Activation::SiLU ? "silu" : "gelu", fwd, fwdTBs,
                  100 * fwdTBs / copyTBs, 100 * fwdTBs / fwdCopy, bwd, bwdTBs,
                  100 * bwdTBs / copyTBs, 100 * bwdTBs / bwdCopy);
    }
  }

  // Tuning sweep: columns per program (BLOCK) and warps, forward SwiGLU,
  // through the JIT directly.
  // Run from the repository root (scripts/gpu_run.sh does).
  auto glu = rt::KernelSource::fromFile("dsl_examples/gated_activations.tile");
  std::printf("\n| M | F | BLOCK | warps | fwd ms | fwd TB/s |\n|---|---|---|---|---|---|\n");
  for (Shape s : {Shape{16384, 11008}, Shape{4096, 4096}}) {
    auto h = rt::DeviceBuffer::fromHost(randomBf16(s.M * 2 * s.F, rng));
    rt::DeviceBuffer y(s.M * s.F * 2);
    for (int block : {1024, 2048, 4096})
      for (int warps : {4, 8}) {
        rt::JITOptions o;
        o.numWarps = warps;
        rt::Kernel &k = rt::JIT::global().get(
            glu, "glu_fwd", {{"BLOCK", std::to_string(block)}}, o);
        rt::LaunchConfig c;
        c.grid = rt::Dim3(unsigned(s.M * ((s.F + block - 1) / block)));
        double ms = medianMs([&] {
          k.launch(c, {rt::Arg::ptr(h.ptr(), DType::BF16),
                       rt::Arg::ptr(y.ptr(), DType::BF16),
                       rt::Arg::i32(int32_t(s.F)), rt::Arg::i32(int32_t(2 * s.F)),
                       rt::Arg::i32(int32_t(s.F))});
        });
        std::printf("| %lld | %lld | %d | %d | %.4f | %.3f |\n", (long long)s.M,
                    (long long)s.F, block, warps, ms,
                    6.0 * s.M * s.F / (ms * 1e-3) / 1e12);
      }
  }

  // Experiment: a persistent grid (bench/gated/glu_persistent.tile).
  auto persistent = rt::KernelSource::fromFile("bench/gated/glu_persistent.tile");
  std::printf("\n| M | F | programs | fwd ms | fwd TB/s |\n|---|---|---|---|---|\n");
  int sms = dev.multiprocessorCount();
  for (Shape s : {Shape{16384, 11008}, Shape{4096, 4096}}) {
    auto h = rt::DeviceBuffer::fromHost(randomBf16(s.M * 2 * s.F, rng));
    rt::DeviceBuffer y(s.M * s.F * 2);
    rt::Kernel &k = rt::JIT::global().get(persistent, "glu_fwd_persistent");
    int64_t total = s.M * ((s.F + 1023) / 1024);
    for (int64_t programs : {total, int64_t(sms) * 4, int64_t(sms) * 8,
                             int64_t(sms) * 16}) {
      double ms = medianMs([&] {
        k.launch(rt::Dim3(unsigned(programs)),
                 {rt::Arg::ptr(h.ptr(), DType::BF16),
                  rt::Arg::ptr(y.ptr(), DType::BF16), rt::Arg::i32(int32_t(s.M)),
                  rt::Arg::i32(int32_t(s.F)), rt::Arg::i32(int32_t(2 * s.F)),
                  rt::Arg::i32(int32_t(s.F))});
      });
      std::printf("| %lld | %lld | %lld | %.4f | %.3f |\n", (long long)s.M,
                  (long long)s.F, (long long)programs, ms,
                  6.0 * s.M * s.F / (ms * 1e-3) / 1e12);
    }
  }
  (void)argc;
  (void)argv;
  return 0;
}
