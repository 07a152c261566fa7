// `harness list`: problems, their variants (compiled here or not) and shapes.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "harness/build_info.hpp"
#include "harness/cli.hpp"

namespace harness::cli {
namespace {

void print_shapes(const char* title, const std::vector<ShapeCase>& shapes) {
  fmt::print("  {}:\n", title);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::string ref;
    if (shapes[i].official_reference_us) ref = fmt::format("  (official reference {:.1f} us)", *shapes[i].official_reference_us);
    fmt::print("    {:>2}  {:<56} seed {}{}\n", i, shapes[i].label(), shapes[i].seed, ref);
  }
}

int list_problems() {
  fmt::print("harness {} ({} build, commit {})\n", build_info().version, build_info().backend, build_info().git_commit);
  for (const Problem* p : problem_registry()) {
    fmt::print("\n{}: {}\n  variants:\n", p->name(), p->description());
    std::vector<std::pair<std::string, std::string>> rows;  // (name, line): compiled and uncompiled in one order
    for (const auto& v : variant_registry()) {
      if (v.problem != p->name()) continue;
      std::string flags;
      if (v.flags & kVariantReference) flags += " [reference]";
      if (v.flags & kVariantPlanted) flags += " [planted]";
      if (v.flags & kVariantMatrix8bit) flags += " [8-bit matrix]";
      rows.emplace_back(v.name, fmt::format("    {:<16} {:<4} available    reads {:<34} {}{}\n", v.name,
                                            v.backend == Backend::gpu ? "gpu" : "cpu",
                                            fmt::format("{}", fmt::join(v.reads, ",")), v.description, flags));
    }
    for (const auto& name : uncompiled_gpu_variants(p->name()))
      rows.emplace_back(name, fmt::format("    {:<16} {:<4} not in this {} build\n", name, "gpu", build_info().backend));
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return variant_name_less(a.first, b.first); });
    for (const auto& row : rows) fmt::print("{}", row.second);
    print_shapes("test shapes", p->test_shapes());
    print_shapes("benchmark shapes", p->benchmark_shapes());
  }
  return kExitOk;
}

Command setup(CLI::App& root) {
  auto* app = root.add_subcommand("list", "List problems, variants and shapes");
  return {app, list_problems};
}

}  // namespace
}  // namespace harness::cli

HARNESS_REGISTER_COMMAND("list", harness::cli::setup);
