// `harness report -o report.html [--leaderboard F] [results...]`: one self-contained HTML file.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "harness/atomic_file.hpp"
#include "harness/cli.hpp"
#include "harness/report.hpp"

namespace harness {
namespace {

struct ReportArgs {
  std::string out, leaderboard = "leaderboard.json", title = "Kernel harness report";
  std::vector<std::string> results;
};

int report_command(const ReportArgs& o) {
  ReportInput in;
  in.title = o.title;
  try {
    in.leaderboard = load_leaderboard(o.leaderboard);
    for (const auto& path : o.results) {
      nlohmann::json doc;
      try {
        doc = nlohmann::json::parse(read_text_file(path));
      } catch (const nlohmann::json::parse_error& ex) {
        throw LeaderboardError(path + ": malformed JSON (byte " + std::to_string(ex.byte) + ")");
      }
      for (auto& e : entries_from_results(doc)) in.results.push_back(std::move(e));
    }
  } catch (const LeaderboardError& ex) {
    throw cli::UsageError(ex.what());
  }
  write_file_atomic(o.out, render_html_report(in));
  std::cout << "wrote " << o.out << "\n";
  return cli::kExitOk;
}

cli::Command setup(CLI::App& root) {
  auto* app = root.add_subcommand("report", "Write an HTML report (inline SVG charts) of the leaderboard and runs");
  auto o = std::make_shared<ReportArgs>();
  app->add_option("-o,--output", o->out, "HTML file to write")->required();
  app->add_option("--leaderboard", o->leaderboard, "Leaderboard file (missing = empty)")->capture_default_str();
  app->add_option("--title", o->title, "Page title");
  app->add_option("results", o->results, "Results files to show next to the leaderboard");
  return {app, [o] { return report_command(*o); }};
}

}  // namespace
}  // namespace harness

HARNESS_REGISTER_COMMAND("report", harness::setup);
