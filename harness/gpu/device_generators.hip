// Registry of the problems' GPU input generators (filled by static registrars at start-up).
#include <map>
#include <stdexcept>

#include "harness/gpu/device_generators.hpp"

namespace harness::gpu {
namespace {

std::map<std::string, DeviceGenerateFn>& generators() {
  static std::map<std::string, DeviceGenerateFn> g;
  return g;
}

}  // namespace

DeviceGeneratorRegistrar::DeviceGeneratorRegistrar(const char* problem, DeviceGenerateFn fn) {
  if (!fn) throw std::logic_error(std::string("null device generator for ") + problem);
  if (!generators().emplace(problem, fn).second)
    throw std::logic_error(std::string("two device generators registered for ") + problem);
}

DeviceGenerateFn find_device_generator(const std::string& problem) {
  const auto it = generators().find(problem);
  return it == generators().end() ? nullptr : it->second;
}

}  // namespace harness::gpu
