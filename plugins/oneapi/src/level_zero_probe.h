// Whether a Level Zero driver and GPU exist here: libze_loader.so.1 opened with dlopen and
// zeInit's result checked before any other call (a loader without a driver fails there).
#pragma once
#include <string>

namespace rlx::oneapi {

struct LevelZeroProbe {
  bool driver = false;  // zeInit succeeded and a driver reported at least one device
  int devices = 0;
  std::string detail;  // what was found, or why nothing was
};

// Probes once per process.
const LevelZeroProbe& probe_level_zero();

}  // namespace rlx::oneapi
