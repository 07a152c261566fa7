// `harness report -o report.html [--leaderboard F] [results...]`: one self-contained HTML file.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "harness/atomic_file.hpp"
#include "harness/report.hpp"

namespace harness {

void register_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("report", "Write an HTML report (inline SVG charts) of the leaderboard and runs");
  struct Opts {
    std::string out, leaderboard = "leaderboard.json", title = "Kernel harness report";
    std::vector<std::string> results;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("-o,--output", o->out, "HTML file to write")->required();
  cmd->add_option("--leaderboard", o->leaderboard, "Leaderboard file (missing = empty)")->capture_default_str();
  cmd->add_option("--title", o->title, "Page title");
  cmd->add_option("results", o->results, "Results files to show next to the leaderboard");
  cmd->callback([o] {
    try {
      ReportInput in;
      in.title = o->title;
      in.leaderboard = load_leaderboard(o->leaderboard);
      for (const auto& path : o->results) {
        nlohmann::json doc;
        try {
          doc = nlohmann::json::parse(read_text_file(path));
        } catch (const nlohmann::json::parse_error& ex) {
          throw LeaderboardError(path + ": malformed JSON (byte " + std::to_string(ex.byte) + ")");
        }
        for (auto& e : entries_from_results(doc)) in.results.push_back(std::move(e));
      }
      write_file_atomic(o->out, render_html_report(in));
      std::cout << "wrote " << o->out << "\n";
    } catch (const LeaderboardError& ex) {
      std::cerr << "harness: " << ex.what() << "\n";
      throw CLI::RuntimeError(2);
    } catch (const std::runtime_error& ex) {  // writing the file
      std::cerr << "harness: " << ex.what() << "\n";
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace harness
