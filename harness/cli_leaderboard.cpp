// `harness leaderboard [--problem P] [--device D] [--file F]` and `harness leaderboard merge A B ... -o OUT`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

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
                    e.mode, e.commit.substr(0, 10), e.date});
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

[[noreturn]] void fail_usage(const std::string& msg) {
  std::cerr << "harness: " << msg << "\n";
  throw CLI::RuntimeError(2);
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

void register_leaderboard_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("leaderboard", "Show the local leaderboard (ranking, per-shape times, floors)");
  struct Opts {
    std::string file = "leaderboard.json";
    LeaderboardFilter filter;
    std::vector<std::string> inputs;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--file,-f", o->file, "Leaderboard file")->capture_default_str();
  cmd->add_option("--problem", o->filter.problem, "Only this problem");
  cmd->add_option("--device", o->filter.device, "Only this device");

  auto* merge = cmd->add_subcommand("merge", "Merge leaderboard files (bests compete, nothing is dropped)");
  merge->add_option("inputs", o->inputs, "Leaderboard files")->required();
  merge->add_option("-o,--output", o->out, "Output file")->required();
  merge->callback([o] {
    try {
      json board = empty_leaderboard();
      for (const auto& in : o->inputs) {
        if (!std::ifstream(in)) fail_usage(in + ": cannot open");
        merge_board(board, parse_leaderboard(read_text_file(in), in));
      }
      save_leaderboard(o->out, board);
      std::cout << "merged " << o->inputs.size() << " file(s) into " << o->out << "\n";
    } catch (const LeaderboardError& ex) {
      fail_usage(ex.what());
    }
  });

  cmd->callback([o, merge] {
    if (merge->parsed()) return;
    try {
      std::cout << render_leaderboard(load_leaderboard(o->file), o->filter);
    } catch (const LeaderboardError& ex) {
      fail_usage(ex.what());
    }
  });
}

}  // namespace harness
