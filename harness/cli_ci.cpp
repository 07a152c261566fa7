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

namespace harness {

namespace {

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "harness: " << msg << "\n";
  throw CLI::RuntimeError(kCiUsage);
}

std::string make_temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "harness-ci-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) usage_error("cannot create a temporary directory for results");
  return tmpl;
}

}  // namespace

void register_ci_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ci", "Regression gate: run variants, compare with the leaderboard's best");
  struct Opts {
    CiOptions ci;
    std::string max_slowdown = "5%", shard = "1/1", run_args;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--baseline", o->ci.baseline, "Leaderboard file with the baseline bests")->required();
  cmd->add_option("--max-slowdown", o->max_slowdown, "Allowed slowdown per shape (5% or 0.05)")
      ->capture_default_str();
  cmd->add_option("--problems", o->ci.problems, "Problems to run (default: all)");
  cmd->add_option("--variants", o->ci.variants, "Variants to run (default: all of this build; planted only if named)");
  cmd->add_option("--shard", o->shard, "Take jobs k with k % n == i - 1 (1 <= i <= n)")->capture_default_str();
  cmd->add_option("--summary", o->ci.summary_path, "Append a markdown summary to this file");
  cmd->add_option("--json-dir", o->ci.json_dir, "Directory for each job's results file (default: a temp dir)");
  cmd->add_option("--mode", o->ci.mode, "Mode of each run: benchmark | leaderboard | test")
      ->check(CLI::IsMember({"test", "benchmark", "leaderboard"}))
      ->capture_default_str();
  cmd->add_option("--run-args", o->run_args, "Extra arguments for each `harness run`, space separated");
  cmd->add_option("--results", o->ci.results_files, "Judge these results files instead of running anything");
  cmd->callback([o] {
    CiOptions ci = o->ci;
    try {
      ci.max_slowdown = parse_fraction(o->max_slowdown);
      std::tie(ci.shard_index, ci.shard_count) = parse_shard(o->shard);
    } catch (const std::invalid_argument& ex) {
      usage_error(ex.what());
    }
    std::istringstream words(o->run_args);
    for (std::string w; words >> w;) ci.run_args.push_back(w);
    if (ci.json_dir.empty()) ci.json_dir = make_temp_dir();
    std::error_code ec;
    std::filesystem::create_directories(ci.json_dir, ec);
    if (ec) usage_error("cannot create " + ci.json_dir + ": " + ec.message());
    int code = kCiOk;
    try {
      const CiExecutor exec = ci.results_files.empty() ? reexec_executor(ci) : CiExecutor{};
      code = run_ci(ci, exec, std::cerr);
    } catch (const LeaderboardError& ex) {
      usage_error(ex.what());
    }
    if (code != kCiOk) throw CLI::RuntimeError(code);
  });
}

}  // namespace harness
