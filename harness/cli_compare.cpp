// `harness compare A B [--format table|md|json] [--file leaderboard.json] [--device D]`.
#include <iostream>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>

#include "harness/cli.hpp"
#include "harness/compare.hpp"

namespace harness {
namespace {

struct CompareArgs {
  std::string a, b, format = "table", file = "leaderboard.json", device;
};

std::string describe(const std::string& ref, const Entry& e) {
  return ref + " [" + e.variant + ", " + e.device + ", " + (e.commit.empty() ? "?" : short_commit(e.commit)) + "]";
}

int compare_command(const CompareArgs& o) {
  static const std::map<std::string, CompareFormat> formats = {
      {"table", CompareFormat::table}, {"md", CompareFormat::md}, {"json", CompareFormat::json}};
  try {
    const Entry a = resolve_run(o.a, o.file, o.device);
    const Entry b = resolve_run(o.b, o.file, o.device);
    if (a.problem != b.problem)
      std::cerr << "harness: warning: comparing different problems (" << a.problem << ", " << b.problem << ")\n";
    std::cout << render_comparison(compare_entries(a, b, describe(o.a, a), describe(o.b, b)), formats.at(o.format));
    return cli::kExitOk;
  } catch (const LeaderboardError& ex) {
    throw cli::UsageError(ex.what());
  }
}

cli::Command setup(CLI::App& root) {
  auto* app = root.add_subcommand(
      "compare", "Compare two runs shape by shape: B/A ratios, significance from the standard errors");
  auto o = std::make_shared<CompareArgs>();
  const std::string run_help = "results file (FILE or FILE#problem:variant) or problem:variant[@commit] from --file";
  app->add_option("A", o->a, "Baseline run: " + run_help)->required();
  app->add_option("B", o->b, "Candidate run: " + run_help)->required();
  app->add_option("--format", o->format, "table | md | json")
      ->check(CLI::IsMember({"table", "md", "json"}))
      ->capture_default_str();
  app->add_option("--file,-f", o->file, "Leaderboard file for problem:variant references")->capture_default_str();
  app->add_option("--device", o->device, "Device of leaderboard references (if it holds several)");
  return {app, [o] { return compare_command(*o); }};
}

}  // namespace
}  // namespace harness

HARNESS_REGISTER_COMMAND("compare", harness::setup);
