// GPU input generators, one per problem, registered from problems/<p>/gpu/generate.hip.
// A generator writes the problem's inputs into device buffers, bit-identical to Problem::generate.
#pragma once
#include <cstdint>
#include <string>

#include "harness/problem.hpp"

namespace harness::gpu {

using DeviceGenerateFn = void (*)(const ShapeCase& s, uint64_t seed, const TensorPtrs& device_dst);

struct DeviceGeneratorRegistrar {
  DeviceGeneratorRegistrar(const char* problem, DeviceGenerateFn fn);
};
DeviceGenerateFn find_device_generator(const std::string& problem);  // nullptr if none

}  // namespace harness::gpu

#define HARNESS_REGISTER_DEVICE_GENERATOR(PROBLEM, FN) \
  static ::harness::gpu::DeviceGeneratorRegistrar HARNESS_CONCAT(harness_devgen_, __LINE__)(PROBLEM, FN)
