#include "harness/compare.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "harness/report.hpp"

namespace harness {

using nlohmann::json;

Comparison compare_entries(const Entry& a, const Entry& b, const std::string& a_name, const std::string& b_name) {
  Comparison c;
  c.a_name = a_name;
  c.b_name = b_name;
  c.a_timing = a.timing;
  c.b_timing = b.timing;
  double log_sum = 0;
  for (const auto& sa : a.shapes) {
    if (!(sa.mean_ns > 0)) continue;
    const ShapeEntry* sb = b.shape(sa.label);
    if (!sb || !(sb->mean_ns > 0)) {
      c.only_a.push_back(sa.label);
      continue;
    }
    ShapeDelta d;
    d.label = sa.label;
    d.a_ns = sa.mean_ns;
    d.b_ns = sb->mean_ns;
    d.ratio = d.b_ns / d.a_ns;
    const double diff = d.b_ns - d.a_ns;
    const double se = std::sqrt(sa.err_ns * sa.err_ns + sb->err_ns * sb->err_ns);
    d.z = se > 0 ? diff / se : (diff == 0 ? 0.0 : std::copysign(INFINITY, diff));
    d.significant = std::fabs(d.z) > kSignificantZ;
    log_sum += std::log(d.ratio);
    c.shapes.push_back(d);
  }
  for (const auto& sb : b.shapes)
    if (sb.mean_ns > 0) {
      const ShapeEntry* sa = a.shape(sb.label);
      if (!sa || !(sa->mean_ns > 0)) c.only_b.push_back(sb.label);
    }
  if (!c.shapes.empty()) c.geomean_ratio = std::exp(log_sum / static_cast<double>(c.shapes.size()));
  return c;
}

namespace {

// A results file holds one or more runs; "FILE#variant" or "FILE#problem:variant" picks one.
Entry run_from_file(const std::string& path, const std::string& selector) {
  json j;
  try {
    j = json::parse(read_text_file(path));
  } catch (const json::parse_error& ex) {
    throw LeaderboardError(path + ": malformed JSON (byte " + std::to_string(ex.byte) + ")");
  }
  if (j.is_object() && j.contains("devices") && !j.contains("runs"))
    throw LeaderboardError(path + ": is a leaderboard; name a run as problem:variant[@commit]");
  std::vector<Entry> runs;
  try {
    runs = entries_from_results(j);
  } catch (const LeaderboardError& ex) {
    throw LeaderboardError(path + ": " + ex.what());
  }
  std::vector<Entry> picked;
  std::string names;
  for (auto& e : runs) {
    names += (names.empty() ? "" : ", ") + e.problem + ":" + e.variant;
    if (selector.empty() || selector == e.variant || selector == e.problem + ":" + e.variant) picked.push_back(e);
  }
  if (picked.size() != 1)
    throw LeaderboardError(path + (selector.empty() ? "" : "#" + selector) + ": " + std::to_string(picked.size()) +
                           " matching runs (" + names + "); select one as FILE#problem:variant");
  return picked.front();
}

}  // namespace

Entry resolve_run(const std::string& ref, const std::string& leaderboard_path, const std::string& device) {
  const auto hash = ref.find('#');
  const std::string file = ref.substr(0, hash);
  if (std::filesystem::is_regular_file(file))
    return run_from_file(file, hash == std::string::npos ? "" : ref.substr(hash + 1));
  const auto colon = ref.find(':');
  if (colon == std::string::npos)
    throw LeaderboardError(ref + ": no such results file, and not of the form problem:variant[@commit]");
  const std::string problem = ref.substr(0, colon);
  std::string variant = ref.substr(colon + 1), commit;
  if (const auto at = variant.find('@'); at != std::string::npos) {
    commit = variant.substr(at + 1);
    variant = variant.substr(0, at);
  }
  const json board = load_leaderboard(leaderboard_path);
  std::string dev = device;
  if (dev.empty()) {
    for (const auto& d : board_devices(board))
      if (!entries_for(board, d, problem, variant).empty()) {
        if (!dev.empty())
          throw LeaderboardError(ref + ": recorded on several devices (" + dev + ", " + d + "); pass --device");
        dev = d;
      }
  }
  for (const auto& e : entries_for(board, dev, problem, variant)) {
    if (commit.empty() || e.commit.rfind(commit, 0) == 0) return e;
  }
  throw LeaderboardError(ref + ": not in " + leaderboard_path + (dev.empty() ? "" : " for device " + dev));
}

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string fmt_z(double z) {
  if (std::isinf(z)) return z > 0 ? "+inf" : "-inf";
  return fmt("%+.1f", z);
}

}  // namespace

json comparison_to_json(const Comparison& c) {
  json shapes = json::array();
  for (const auto& d : c.shapes) {
    // JSON has no infinity: an exact (zero-error) difference is reported as a huge z.
    const double z = std::isinf(d.z) ? std::copysign(1e308, d.z) : d.z;
    shapes.push_back({{"label", d.label}, {"a_ns", d.a_ns}, {"b_ns", d.b_ns}, {"ratio", d.ratio}, {"z", z},
                      {"significant", d.significant}});
  }
  return {{"a", c.a_name},
          {"b", c.b_name},
          {"shapes", shapes},
          {"only_a", c.only_a},
          {"only_b", c.only_b},
          {"geomean_ratio", c.geomean_ratio ? json(*c.geomean_ratio) : json(nullptr)},
          {"a_timing", c.a_timing},
          {"b_timing", c.b_timing},
          {"same_timing", c.same_timing()}};
}

std::string render_comparison(const Comparison& c, CompareFormat f) {
  if (f == CompareFormat::json) return comparison_to_json(c).dump(2) + "\n";
  const TableStyle style = f == CompareFormat::md ? TableStyle::markdown : TableStyle::plain;
  std::vector<std::vector<std::string>> rows;
  for (const auto& d : c.shapes) {
    std::string verdict = "~";
    if (d.significant) verdict = d.ratio > 1 ? "slower" : "faster";
    rows.push_back({d.label, fmt_us(d.a_ns), fmt_us(d.b_ns), fmt("%.3f", d.ratio), fmt_z(d.z), verdict});
  }
  std::string out = "A = " + c.a_name + "\nB = " + c.b_name + "\n\n";
  out += format_table({"shape", "A (us)", "B (us)", "B/A", "z", "change"}, rows, style);
  out += "\ngeometric-mean ratio B/A: " + (c.geomean_ratio ? fmt("%.4f", *c.geomean_ratio) : std::string("n/a")) +
         "  (|z| > 3 counts as significant; z from the recorded standard errors)\n";
  for (const auto& l : c.only_a) out += "only in A: " + l + "\n";
  for (const auto& l : c.only_b) out += "only in B: " + l + "\n";
  auto named = [](const std::string& t) { return t.empty() ? std::string("not recorded") : t; };
  if (!c.same_timing())
    out += "timed differently (A: " + named(c.a_timing) + "; B: " + named(c.b_timing) +
           "): the ratios include the method's difference\n";
  return out;
}

}  // namespace harness
