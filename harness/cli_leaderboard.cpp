// `harness leaderboard [--problem P] [--device D] [--file F]`, `harness leaderboard merge A B ... -o OUT`,
// `harness leaderboard [--file F] record RESULTS...`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "harness/cli.hpp"
#include "harness/leaderboard.hpp"
#include "harness/report.hpp"

namespace harness {

using nlohmann::json;

namespace {

std::string percent(double num, double den) {
  if (!(num > 0) || !(den > 0)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * num / den);
  return buf;
}

double geomean_floor(const Entry& e) {
  double log_sum = 0;
  for (const auto& s : e.shapes) {
    if (!(s.floor_ns > 0)) return 0;
    log_sum += std::log(s.floor_ns);
  }
  return e.shapes.empty() ? 0 : std::exp(log_sum / static_cast<double>(e.shapes.size()));
}

std::string render_problem(const json& variants, const std::string& problem) {
  std::vector<Entry> ranked;
  std::vector<std::string> unranked;
  for (const auto& [var, slot] : variants.items()) {
    if (slot.contains("best") && !slot["best"].is_null()) ranked.push_back(entry_from_json(slot["best"]));
    else unranked.push_back(var + ": no passing run (" + std::to_string(slot["history"].size()) + " recorded)");
  }
  std::sort(ranked.begin(), ranked.end(), [](const Entry& a, const Entry& b) { return *a.score_ns < *b.score_ns; });

  std::string out;
  std::vector<std::vector<std::string>> rows;
  int rank = 0;
  for (const auto& e : ranked)
    rows.push_back({std::to_string(++rank), e.variant, fmt_us(*e.score_ns), percent(geomean_floor(e), *e.score_ns),
                    e.mode, short_commit(e.commit), e.date});
  out += format_table({"#", "variant", "score (us)", "of floor", "mode", "commit", "date"}, rows, TableStyle::plain);
  for (const auto& u : unranked) out += "  " + u + "\n";
  if (ranked.empty()) return out;

  // Per shape: floor, the official MI355X time, then each ranked variant's mean and fraction of floor.
  std::vector<std::string> header = {"shape", "floor (us)", "MI355X ref (us)"};
  for (const auto& e : ranked) header.push_back(e.variant + " (us, of floor)");
  const auto refs = official_reference_us(problem);
  std::vector<std::string> labels;
  for (const auto& e : ranked)
    for (const auto& s : e.shapes)
      if (std::find(labels.begin(), labels.end(), s.label) == labels.end()) labels.push_back(s.label);
  rows.clear();
  for (const auto& label : labels) {
    double floor_ns = 0;
    for (const auto& e : ranked)
      if (const ShapeEntry* s = e.shape(label)) floor_ns = std::max(floor_ns, s->floor_ns);
    auto ref = refs.find(label);
    std::vector<std::string> row = {label, floor_ns > 0 ? fmt_us(floor_ns) : "-",
                                    ref != refs.end() ? fmt_us(ref->second * 1000.0) : "-"};
    for (const auto& e : ranked) {
      const ShapeEntry* s = e.shape(label);
      row.push_back(s && s->mean_ns > 0 ? fmt_us(s->mean_ns) + " (" + percent(s->floor_ns, s->mean_ns) + ")" : "-");
    }
    rows.push_back(std::move(row));
  }
  out += "\n" + format_table(header, rows, TableStyle::plain);
  return out;
}

}  // namespace

std::string render_leaderboard(const json& board, const LeaderboardFilter& f) {
  std::string out;
  for (const auto& [dev, problems] : board["devices"].items()) {
    if (!f.device.empty() && dev != f.device) continue;
    for (const auto& [prob, variants] : problems.items()) {
      if (!f.problem.empty() && prob != f.problem) continue;
      out += "== " + prob + " on " + dev + " ==\n" + render_problem(variants, prob) + "\n";
    }
  }
  return out.empty() ? "(no entries)\n" : out;
}

namespace {

int merge_files(const std::vector<std::string>& inputs, const std::string& out) {
  json board = empty_leaderboard();
  for (const auto& in : inputs) {
    if (!std::ifstream(in)) throw LeaderboardError(in + ": cannot open");
    merge_board(board, parse_leaderboard(read_text_file(in), in));
  }
  save_leaderboard(out, board);
  std::cout << "merged " << inputs.size() << " file(s) into " << out << "\n";
  return cli::kExitOk;
}

int record_files(const std::vector<std::string>& inputs, const std::string& file) {
  for (const auto& in : inputs) {
    json doc;
    try {
      doc = json::parse(read_text_file(in));
    } catch (const json::parse_error& ex) {
      throw LeaderboardError(in + ": malformed JSON (byte " + std::to_string(ex.byte) + ")");
    }
    const auto recorded = record_result(file, doc);
    const json board = load_leaderboard(file);
    for (const auto& e : recorded) {
      const auto best = best_for(board, e.device, e.problem, e.variant);
      const bool is_best = best && to_json(*best) == to_json(e);
      std::string where = is_best ? "as best" : "in history";
      if (!eligible_for_best(e)) where += " (" + (e.passed ? std::string("not a timed run") : e.reason) + ")";
      std::cout << "recorded " << e.problem << ":" << e.variant << " on " << e.device << " " << where << " into "
                << file << "\n";
    }
  }
  return cli::kExitOk;
}

cli::Command setup(CLI::App& root) {
  auto* app = root.add_subcommand("leaderboard", "Show the local leaderboard (ranking, per-shape times, floors)");
  struct Opts {
    std::string file = "leaderboard.json";
    LeaderboardFilter filter;
    std::vector<std::string> inputs;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  app->add_option("--file,-f", o->file, "Leaderboard file")->capture_default_str();
  app->add_option("--problem", o->filter.problem, "Only this problem");
  app->add_option("--device", o->filter.device, "Only this device");
  auto* merge = app->add_subcommand("merge", "Merge leaderboard files (bests compete, nothing is dropped)");
  merge->add_option("inputs", o->inputs, "Leaderboard files")->required();
  merge->add_option("-o,--output", o->out, "Output file")->required();
  auto* record = app->add_subcommand("record", "Record results files (harness run --json) into --file");
  record->add_option("results", o->inputs, "Results files")->required();
  record->fallthrough();  // --file may follow the subcommand
  merge->fallthrough();
  return {app, [o, merge, record] {
            try {
              if (merge->parsed()) return merge_files(o->inputs, o->out);
              if (record->parsed()) return record_files(o->inputs, o->file);
              std::cout << render_leaderboard(load_leaderboard(o->file), o->filter);
              return cli::kExitOk;
            } catch (const LeaderboardError& ex) {
              throw cli::UsageError(ex.what());
            }
          }};
}

}  // namespace
}  // namespace harness

HARNESS_REGISTER_COMMAND("leaderboard", harness::setup);
