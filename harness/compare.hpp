// A/B comparison of two runs, shape by shape, with the significance of each change taken from the
// recorded standard errors of the means.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/leaderboard.hpp"

namespace harness {

inline constexpr double kSignificantZ = 3.0;

struct ShapeDelta {
  std::string label;
  double a_ns = 0, b_ns = 0;  // means
  double ratio = 0;           // b / a: > 1 means B is slower
  double z = 0;               // (b - a) / sqrt(err_a^2 + err_b^2); +-inf if both errors are 0 and b != a
  bool significant = false;   // |z| > kSignificantZ
};

struct Comparison {
  std::string a_name, b_name;
  std::vector<ShapeDelta> shapes;          // shapes timed in both, in A's order
  std::vector<std::string> only_a, only_b;  // shapes timed in one run only
  std::optional<double> geomean_ratio;     // over `shapes`
  std::string a_timing, b_timing;          // the runs' timing methods ("" where a file does not say)
  bool same_timing() const { return a_timing == b_timing; }
};

Comparison compare_entries(const Entry& a, const Entry& b, const std::string& a_name = "A",
                           const std::string& b_name = "B");

// A run reference: a results file path, or "problem:variant[@commit]" looked up in the leaderboard
// file (best, or the newest entry whose commit starts with `commit`). `device` picks the device when
// the leaderboard holds more than one. Throws LeaderboardError naming what was not found.
Entry resolve_run(const std::string& ref, const std::string& leaderboard_path, const std::string& device);

enum class CompareFormat { table, md, json };
std::string render_comparison(const Comparison& c, CompareFormat f);
nlohmann::json comparison_to_json(const Comparison& c);

}  // namespace harness
