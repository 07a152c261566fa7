// Timing statistics and the official stopping rule (spec: evaluation.md, "Stopping rule and statistics").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace harness {

struct Stats {
  int64_t runs = 0;
  double mean = 0, std = 0, err = 0;  // std: sample (n-1); err: std / sqrt(n)
  double best = 0, worst = 0, median = 0;
};

// Same unit in, same unit out.
Stats compute_stats(const std::vector<double>& samples);

// Geometric mean of positive values; 0 for an empty list, NaN if any value is <= 0 or not finite.
double geometric_mean(const std::vector<double>& values);

struct StopRule {
  int64_t min_runs = 3;
  int64_t max_runs = 1000;
  double max_timed_s = 50;   // runs * mean, i.e. the sum of the timed durations
  double max_wall_s = 120;   // wall time of the shape's timed loop
  double max_rel_err = 0.001;
};

// The caps of the two timed modes.
StopRule benchmark_stop_rule();    // 1000 runs / 50 s
StopRule leaderboard_stop_rule();  // 100 runs / 30 s

enum class StopReason { none, converged, max_runs, time_budget, wall_time };
std::string to_string(StopReason r);

// Called after every timed run with all durations so far (seconds) and the wall time spent.
// The run cap always applies; the other conditions only after min_runs (as the official runner).
StopReason should_stop(const StopRule& rule, const std::vector<double>& durations_s, double wall_s);

}  // namespace harness
