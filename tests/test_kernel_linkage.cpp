// Kernel sources give their kernels and launch helpers internal linkage (an unnamed namespace, or
// `static __global__`). Two variant files that instantiate the same kernel template from a shared
// header otherwise share one copy of each inline launch helper and of its function-local statics (one
// per process: the linker merges them in the harness binary, and the dynamic linker unifies them
// across exported extension modules), so the first variant to run sets its own kernel's attributes and
// the other then launches its copy without them (seen on the H200: "cluster misconfiguration").
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/catch.hpp"

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every `__global__` of the text is `static __global__`, or the text opens an unnamed namespace
// before its first kernel.
bool kernels_are_internal(const std::string& text) {
  const auto first = text.find("__global__");
  if (first == std::string::npos) return true;
  const auto unnamed = text.find("namespace {");
  if (unnamed != std::string::npos && unnamed < first) return true;
  const std::regex global("(^|[^_A-Za-z0-9])__global__");
  const std::regex static_global("static\\s+__global__");
  const auto all = std::distance(std::sregex_iterator(text.begin(), text.end(), global), std::sregex_iterator());
  const auto stat = std::distance(std::sregex_iterator(text.begin(), text.end(), static_global), std::sregex_iterator());
  return all == stat;
}

}  // namespace

TEST_CASE("kernel linkage: the checker itself") {
  CHECK(kernels_are_internal("int x;"));
  CHECK(kernels_are_internal("namespace a {\nnamespace {\n__global__ void k() {}\n}\n}"));
  CHECK(kernels_are_internal("static __global__ void k() {}\nstatic __global__ void j() {}"));
  CHECK_FALSE(kernels_are_internal("namespace a {\ntemplate <int N> __global__ void k() {}\n}"));
  CHECK_FALSE(kernels_are_internal("static __global__ void k() {}\n__global__ void j() {}"));
  CHECK_FALSE(kernels_are_internal("__global__ void k() {}\nnamespace {\n}"));
}

TEST_CASE("kernel linkage: every kernel source of the tree gives its kernels internal linkage") {
  const fs::path root = fs::weakly_canonical(fs::path(HARNESS_TEST_DATA_DIR) / ".." / "..");
  int checked = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "problems")) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".h" && ext != ".hip")) continue;
    const std::string text = read_all(e.path());
    if (text.find("__global__") == std::string::npos) continue;
    INFO(e.path().string());
    CHECK(kernels_are_internal(text));
    ++checked;
  }
  CHECK(checked >= 10);
}
