// The command line: a root app whose subcommands register themselves from their own files
// (cli_list.cpp, cli_run.cpp, ...), so that adding one (leaderboard, compare, ci, report, export)
// edits no other file.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/problem.hpp"

namespace harness::cli {

// Exit codes of every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // a check failed, a variant crashed
constexpr int kExitUsage = 2;   // bad command line: one line on stderr naming the valid choices

// A usage error; main prints "harness: error: <what>" and exits with kExitUsage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a subcommand's setup returns: its CLI11 app and what to run when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
using CommandSetup = Command (*)(CLI::App& root);

struct CommandRegistrar {
  CommandRegistrar(const char* name, CommandSetup setup);
};

// Parses argv, runs the chosen subcommand, returns the process exit code.
int main(int argc, char** argv);

// Lookups that fail with a UsageError naming the valid choices.
const Problem& require_problem(const std::string& name);
const VariantEntry& require_variant(const Problem& p, const std::string& name);
// Names as given, plus the groups "gpu" (every GPU variant of this build) and "all", which add the
// variants not already selected, reference first, then v1, v2, ... in number order.
std::vector<const VariantEntry*> select_variants(const Problem& p, const std::vector<std::string>& names);
// "all" or a comma-separated list of indices into a list of `count` shapes.
std::vector<int> parse_shape_list(const std::string& spec, std::size_t count, const std::string& what);

// GPU variants known to the tree ("problem:name") that this build did not compile.
std::vector<std::string> uncompiled_gpu_variants(const std::string& problem);
// Variant names in listing order: named variants (cpu, reference) first, then v1, v2, ..., v10 by number.
bool variant_name_less(const std::string& a, const std::string& b);

}  // namespace harness::cli

#define HARNESS_REGISTER_COMMAND(NAME, SETUP) \
  static ::harness::cli::CommandRegistrar HARNESS_CONCAT(harness_command_, __LINE__)(NAME, SETUP)
