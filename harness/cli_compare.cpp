// `harness compare A B [--format table|md|json] [--file leaderboard.json] [--device D]`.
#include <iostream>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>

#include "harness/compare.hpp"

namespace harness {

void register_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compare", "Compare two runs shape by shape: B/A ratios, significance from the standard errors");
  struct Opts {
    std::string a, b, format = "table", file = "leaderboard.json", device;
  };
  auto o = std::make_shared<Opts>();
  const std::string run_help = "results file (FILE or FILE#problem:variant) or problem:variant[@commit] from --file";
  cmd->add_option("A", o->a, "Baseline run: " + run_help)->required();
  cmd->add_option("B", o->b, "Candidate run: " + run_help)->required();
  cmd->add_option("--format", o->format, "table | md | json")
      ->check(CLI::IsMember({"table", "md", "json"}))
      ->capture_default_str();
  cmd->add_option("--file,-f", o->file, "Leaderboard file for problem:variant references")->capture_default_str();
  cmd->add_option("--device", o->device, "Device of leaderboard references (if it holds several)");
  cmd->callback([o] {
    static const std::map<std::string, CompareFormat> formats = {
        {"table", CompareFormat::table}, {"md", CompareFormat::md}, {"json", CompareFormat::json}};
    try {
      const Entry a = resolve_run(o->a, o->file, o->device);
      const Entry b = resolve_run(o->b, o->file, o->device);
      if (a.problem != b.problem)
        std::cerr << "harness: warning: comparing different problems (" << a.problem << ", " << b.problem << ")\n";
      const auto name = [](const std::string& ref, const Entry& e) {
        return ref + " [" + e.variant + ", " + e.device + ", " + (e.commit.empty() ? "?" : e.commit.substr(0, 10)) +
               "]";
      };
      std::cout << render_comparison(compare_entries(a, b, name(o->a, a), name(o->b, b)), formats.at(o->format));
    } catch (const LeaderboardError& ex) {
      std::cerr << "harness: " << ex.what() << "\n";
      throw CLI::RuntimeError(2);
    }
  });
}

}  // namespace harness
