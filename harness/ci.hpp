// Regression gate: run chosen (problem, variant) pairs, compare each with the leaderboard's best on
// the same device, and turn the outcome into an exit code and a markdown summary.
#pragma once
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/compare.hpp"
#include "harness/leaderboard.hpp"

namespace harness {

inline constexpr int kCiOk = 0;
inline constexpr int kCiUsage = 2;   // bad command line, here or in the `harness run` it starts
inline constexpr int kCiFailed = 3;  // a correctness failure or a crash
inline constexpr int kCiSlower = 4;  // slower than the threshold and than noise

struct CiJob {
  std::string problem, variant;
};

struct CiOptions {
  std::string baseline;                       // leaderboard file
  double max_slowdown = 0.05;                 // 5%
  std::vector<std::string> problems, variants;  // empty = all
  int shard_index = 1, shard_count = 1;       // --shard i/n, 1 <= i <= n: jobs k with k % n == i - 1
  std::string summary_path;                   // markdown summary (appended to, as GitHub's step summary)
  std::string json_dir;                       // where each job's results file goes
  std::string mode = "benchmark";
  std::vector<std::string> run_args;          // extra arguments for `harness run`
  std::vector<std::string> results_files;     // evaluate these instead of running anything
  bool require_repeatable = false;            // a benchmark run whose last output differs from its warm-up's fails
};

// "i/n" -> (i, n); throws std::invalid_argument unless 1 <= i <= n.
std::pair<int, int> parse_shard(const std::string& s);
// "5%" or "0.05" -> 0.05; throws std::invalid_argument.
double parse_fraction(const std::string& s);

// Every registered variant of this build's backend (planted variants only when named in `variants`),
// filtered by problems / variants, then sharded.
std::vector<CiJob> select_jobs(const CiOptions& o);

// What running one job produced: the results document, or why there is none.
struct CiRun {
  std::optional<nlohmann::json> results;
  std::string results_path;
  std::string error;  // non-empty: the job crashed or wrote nothing readable
  bool usage_error = false;  // `harness run` rejected its command line (exit 2, no results)
};
using CiExecutor = std::function<CiRun(const CiJob&)>;

// Re-executes this binary: `<self> run P --variant V --mode M --json DIR/P__V.json ARGS...`.
CiExecutor reexec_executor(const CiOptions& o);

enum class CiStatus { ok, faster, new_entry, slower, failed, crashed, usage };
std::string to_string(CiStatus s);

struct CiOutcome {
  CiJob job;
  CiStatus status = CiStatus::ok;
  std::optional<Entry> run, baseline;
  std::optional<Comparison> comparison;
  std::string message;  // one line: why
  std::string results_path;
};

// Judges one run against the baseline board. require_repeatable: shapes whose last output differed bit for bit
// from the warm-up's (results' repeat_check "differs") fail the job.
CiOutcome evaluate_run(const CiJob& job, const CiRun& run, const nlohmann::json& baseline, double max_slowdown,
                       bool require_repeatable = false);

int ci_exit_code(const std::vector<CiOutcome>& outcomes);
std::string ci_summary_markdown(const std::vector<CiOutcome>& outcomes, const CiOptions& o);

// The whole command: select, run (or read --results files), judge, summarise. Returns the exit code.
int run_ci(const CiOptions& o, const CiExecutor& exec, std::ostream& log);

}  // namespace harness
