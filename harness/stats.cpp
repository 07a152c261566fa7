#include "harness/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace harness {

Stats compute_stats(const std::vector<double>& x) {
  Stats s;
  s.runs = static_cast<int64_t>(x.size());
  if (x.empty()) return s;
  const double n = static_cast<double>(x.size());
  s.mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double ss = 0;
  for (double v : x) ss += (v - s.mean) * (v - s.mean);
  s.std = x.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  s.err = s.std / std::sqrt(n);
  auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  s.best = *lo;
  s.worst = *hi;
  std::vector<double> sorted(x);
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size() / 2;
  s.median = sorted.size() % 2 ? sorted[m] : 0.5 * (sorted[m - 1] + sorted[m]);
  return s;
}

double geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) return std::numeric_limits<double>::quiet_NaN();
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

StopRule benchmark_stop_rule() { return StopRule{3, 1000, 50, 120, 0.001}; }
StopRule leaderboard_stop_rule() { return StopRule{3, 100, 30, 120, 0.001}; }

std::string to_string(StopReason r) {
  switch (r) {
    case StopReason::none: return "none";
    case StopReason::converged: return "converged";
    case StopReason::max_runs: return "max_runs";
    case StopReason::time_budget: return "time_budget";
    case StopReason::wall_time: return "wall_time";
  }
  return "?";
}

StopReason should_stop(const StopRule& rule, const std::vector<double>& d, double wall_s) {
  const auto n = static_cast<int64_t>(d.size());
  if (n >= rule.max_runs) return StopReason::max_runs;
  if (n < rule.min_runs) return StopReason::none;
  const Stats s = compute_stats(d);
  if (s.err < rule.max_rel_err * s.mean) return StopReason::converged;
  if (s.mean * static_cast<double>(n) > rule.max_timed_s) return StopReason::time_budget;
  if (wall_s > rule.max_wall_s) return StopReason::wall_time;
  return StopReason::none;
}

}  // namespace harness
