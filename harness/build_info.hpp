// Facts about this build, fixed at configure time.
#pragma once
#include <string>

namespace harness {
struct BuildInfo {
  std::string version;        // harness version
  std::string git_commit;     // at configure time; "-dirty" appended when the tree had changes then
  std::string backend;        // cpu | cuda | hip
  std::string cxx_compiler;
  std::string gpu_compiler;
  std::string flags;
  std::string all_gpu_variants;  // "problem:name,..." for every .hip variant in the tree
};
const BuildInfo& build_info();
}  // namespace harness
