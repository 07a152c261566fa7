// `harness ci --baseline leaderboard.json [--max-slowdown 5%] [--problems ...] [--variants ...]
//  [--shard i/n] [--summary FILE.md] [--json-dir DIR] [--results FILE...]`
// Exit: 0 ok, 2 usage, 3 correctness failure or crash, 4 slowdown beyond the threshold and noise.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "harness/ci.hpp"
#include "harness/cli.hpp"

namespace harness {
namespace {

struct CiArgs {
  CiOptions ci;
  std::string max_slowdown = "5%", shard = "1/1", run_args;
};

std::string make_temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "harness-ci-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw cli::UsageError("cannot create a temporary directory for results");
  return tmpl;
}

int ci_command(const CiArgs& a) {
  CiOptions ci = a.ci;
  try {
    ci.max_slowdown = parse_fraction(a.max_slowdown);
    std::tie(ci.shard_index, ci.shard_count) = parse_shard(a.shard);
  } catch (const std::invalid_argument& ex) {
    throw cli::UsageError(ex.what());
  }
  std::istringstream words(a.run_args);
  for (std::string w; words >> w;) ci.run_args.push_back(w);
  if (ci.json_dir.empty()) ci.json_dir = make_temp_dir();
  std::error_code ec;
  std::filesystem::create_directories(ci.json_dir, ec);
  if (ec) throw cli::UsageError("cannot create " + ci.json_dir + ": " + ec.message());
  try {
    const CiExecutor exec = ci.results_files.empty() ? reexec_executor(ci) : CiExecutor{};
    return run_ci(ci, exec, std::cerr);
  } catch (const LeaderboardError& ex) {
    throw cli::UsageError(ex.what());
  }
}

cli::Command setup(CLI::App& root) {
  auto* app = root.add_subcommand("ci", "Regression gate: run variants, compare with the leaderboard's best");
  auto a = std::make_shared<CiArgs>();
  app->add_option("--baseline", a->ci.baseline, "Leaderboard file with the baseline bests")->required();
  app->add_option("--max-slowdown", a->max_slowdown, "Allowed slowdown per shape (5% or 0.05)")->capture_default_str();
  app->add_option("--problems", a->ci.problems, "Problems to run (default: all)")->delimiter(',');
  app->add_option("--variants", a->ci.variants, "Variants to run (default: all of this build; planted only if named)")
      ->delimiter(',');
  app->add_option("--shard", a->shard, "Take jobs k with k % n == i - 1 (1 <= i <= n)")->capture_default_str();
  app->add_option("--summary", a->ci.summary_path, "Append a markdown summary to this file");
  app->add_option("--json-dir", a->ci.json_dir, "Directory for each job's results file (default: a temp dir)");
  app->add_option("--mode", a->ci.mode, "Mode of each run: benchmark | leaderboard | test")
      ->check(CLI::IsMember({"test", "benchmark", "leaderboard"}))
      ->capture_default_str();
  app->add_option("--run-args", a->run_args, "Extra arguments for each `harness run`, space separated");
  app->add_option("--results", a->ci.results_files, "Judge these results files instead of running anything");
  app->add_flag("--require-repeatable", a->ci.require_repeatable,
                "Fail a run whose last benchmark output differs bit for bit from its warm-up's");
  return {app, [a] { return ci_command(*a); }};
}

}  // namespace
}  // namespace harness

HARNESS_REGISTER_COMMAND("ci", harness::setup);
