// Host-side checks around kernel launches and device queries.
#pragma once
#include <stdexcept>
#include <string>

#include "problems/common/portability.h"

#if defined(HARNESS_GPU)
inline void harness_check(hipError_t e, const char* what) {
  if (e != hipSuccess) throw std::runtime_error(std::string(what) + ": " + hipGetErrorString(e));
}
// After every launch: a bad configuration shows up here, not later.
inline void harness_check_launch(const char* kernel) { harness_check(hipGetLastError(), kernel); }

// Properties of the current device, read once per process (variants run on one device).
struct DeviceShape {
  int compute_units = 0;
  int warp_size = 0;
};
inline const DeviceShape& current_device_shape() {
  static const DeviceShape shape = [] {
    DeviceShape s;
    int dev = 0;
    harness_check(hipGetDevice(&dev), "hipGetDevice");
    hipDeviceProp_t prop;
    harness_check(hipGetDeviceProperties(&prop, dev), "hipGetDeviceProperties");
    s.compute_units = prop.multiProcessorCount;
    s.warp_size = prop.warpSize;
    return s;
  }();
  return shape;
}
#endif
