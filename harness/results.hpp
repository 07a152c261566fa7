// What a run produced, and its JSON form (schema: docs/results-schema.md, docs/results.schema.json).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.hpp"
#include "harness/stats.hpp"
#include "harness/verdict.hpp"

namespace harness {

constexpr int kResultsSchemaVersion = 1;

enum class Mode { test, benchmark, leaderboard, profile };
std::string to_string(Mode m);
Mode mode_from_string(const std::string& s);  // throws std::invalid_argument

// Which of the problem's shape lists a run draws from. Each mode has its own (test shapes for test mode,
// benchmark shapes otherwise); `--shape-set` picks the other one, e.g. to time the test shapes with the
// benchmark method; `--shape` gives shapes of one's own (the custom set). Runs over another set than the
// mode's own label their shapes "<set>/<label>" and never rank on the leaderboard.
enum class ShapeSet { test, benchmark, custom };
std::string to_string(ShapeSet s);
ShapeSet shape_set_from_string(const std::string& s);  // throws std::invalid_argument
ShapeSet default_shape_set(Mode m);

struct TimingInfo {
  bool flush = true;
  std::size_t flush_bytes = 0;
  bool clean_flush = false;
  bool hide_host = true;
  bool graph = false;
  std::string method;  // "official" or "not official: hot" / "not official: graph" / ...
  std::string device_method;  // the device's own description of how it timed (Device::timing_method)
};
std::string timing_method(const TimingOptions& t);

struct SeedInfo {
  std::optional<uint64_t> seed_override;  // --seed
  bool secret_seed = false;               // --secret-seed given (its value is not recorded)
  std::string inputs_from;                // --inputs DIR, or "" (generated from the seeds)
};

struct ShapeResult {
  int index = 0;  // position in the run's shape list (RunResult::shape_set)
  std::string label;
  std::vector<std::pair<std::string, int64_t>> params;
  uint64_t seed = 0;                      // inputs of the checked (warm-up / test) call
  std::vector<uint64_t> timed_seeds;      // leaderboard: the seed of every timed call
  std::string inputs_digest;              // hex digest of the checked call's inputs (all tensors)
  Stats stats;                            // nanoseconds
  std::string stop_reason;                // stats::to_string(StopReason); "" in test mode
  double bytes = 0, flops = 0;
  double floor_ns = 0;                    // max(bytes / bandwidth, flops / matrix rate); 0 = unknown
  double gbps = 0, pct_bandwidth = 0;
  int64_t checks = 0;                     // outputs checked
  std::string settle_check = "not run";   // escaped-work check: not run | unsupported | passed | escaped
  int host_exposed_timings = 0;           // timed calls whose start event fired before the call returned
  // Benchmark mode: the last call's output against the warm-up's, bit for bit (same inputs):
  // not run | identical | differs. Not a verdict (the official runner does not look).
  std::string repeat_check = "not run";
  int64_t repeat_differing = 0;           // elements whose bits differ
  double repeat_max_abs = 0;              // largest |difference| among them
  std::optional<OfficialVerdict> official;  // worst checked output
  std::optional<StrictVerdict> strict;
  std::string status = "ok";  // ok | failed
  std::string reason;
  bool passed() const { return status == "ok"; }
};

struct RunResult {
  std::string harness_version;
  std::string date;  // UTC ISO 8601
  DeviceInfo device;
  std::string problem, variant;
  Mode mode = Mode::test;
  std::optional<ShapeSet> shape_set;  // unset: the mode's own (see drawn_from)
  TimingInfo timing;
  SeedInfo seeds;
  std::string check_reference;  // "float64 oracle" / "gpu reference variant 'reference'"
  std::vector<ShapeResult> shapes;
  std::optional<double> score_ns;  // geometric mean of the per-shape means, if every shape was timed
  bool passed = false;
  std::string status = "ok";       // ok | failed
  std::string reason;              // why it failed (first failing shape, or the worker's fate)

  ShapeSet drawn_from() const { return shape_set.value_or(default_shape_set(mode)); }
  // Sets score_ns, passed, status and reason from the shapes.
  void finalize();
};

// A run that never produced results (the worker crashed, timed out, ...).
RunResult failed_run(const std::string& problem, const std::string& variant, Mode mode, const std::string& reason);

std::string utc_now_iso8601();

nlohmann::json to_json(const RunResult& r);
RunResult run_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception on a bad document

// The results file: header (schema_version, harness_version, date, build) + runs.
nlohmann::json results_document(const std::vector<RunResult>& runs);
void write_results_file(const std::string& path, const std::vector<RunResult>& runs);

}  // namespace harness
