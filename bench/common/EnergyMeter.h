//===- EnergyMeter.h - The GPU's energy counter, through NVML ---*- C++ -*-===//
//
// Under sustained load an H100 runs at its power cap, and a kernel's speed
// then follows the energy it spends per launch (bench/NOTES.md, "Under
// sustained load"). NVML keeps a counter of the energy the board has used
// since the driver loaded (nvmlDeviceGetTotalEnergyConsumption, mJ); the
// difference over a block of back-to-back launches, divided by their
// number, is a launch's energy. NVML comes with the driver; it is opened at
// run time, so the benches build and run without it (ok() is then false).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_BENCH_ENERGYMETER_H
#define SPARSETILE_BENCH_ENERGYMETER_H

#include <dlfcn.h>

#include <cstdint>

namespace sparsetile::bench {

class EnergyMeter {
public:
  /// NVML device `index` (the lent machines have one GPU, CUDA's device 0).
  explicit EnergyMeter(unsigned index = 0) {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto handle = reinterpret_cast<int (*)(unsigned, void **)>(
        dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    energy = reinterpret_cast<int (*)(void *, unsigned long long *)>(
        dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
    clock = reinterpret_cast<int (*)(void *, int, unsigned *)>(
        dlsym(lib, "nvmlDeviceGetClockInfo"));
    if (!init || !handle || !energy || !clock || init() != 0 ||
        handle(index, &device) != 0)
      device = nullptr;
    unsigned long long mj = 0;
    if (device && energy(device, &mj) != 0)
      device = nullptr; // Counter not supported on this board.
  }
  ~EnergyMeter() {
    if (lib && device) {
      if (auto down =
              reinterpret_cast<int (*)()>(dlsym(lib, "nvmlShutdown")))
        down();
    }
    if (lib)
      dlclose(lib);
  }
  EnergyMeter(const EnergyMeter &) = delete;
  EnergyMeter &operator=(const EnergyMeter &) = delete;

  bool ok() const { return device != nullptr; }
  /// Millijoules since the driver loaded (0 when !ok()).
  unsigned long long millijoules() const {
    unsigned long long mj = 0;
    if (device)
      energy(device, &mj);
    return mj;
  }
  /// The SM clock now, MHz (NVML_CLOCK_SM = 1; 0 when !ok()).
  unsigned smClockMHz() const {
    unsigned mhz = 0;
    if (device)
      clock(device, 1, &mhz);
    return mhz;
  }

private:
  void *lib = nullptr, *device = nullptr;
  int (*energy)(void *, unsigned long long *) = nullptr;
  int (*clock)(void *, int, unsigned *) = nullptr;
};

} // namespace sparsetile::bench

#endif // SPARSETILE_BENCH_ENERGYMETER_H
