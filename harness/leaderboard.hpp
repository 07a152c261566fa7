// The local leaderboard: one JSON file holding, per device / problem / variant, the best passing run
// and the history of every other recorded run.
//
//   {"schema_version": 1, "devices": {DEVICE: {PROBLEM: {VARIANT: {"best": ENTRY|null, "history": [ENTRY...]}}}}}
//
// An ENTRY is the normalised summary of one results file (see make_entry): the leaderboard, compare,
// ci and report all read entries, so they depend on the runner's results schema in one place only.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace harness {

inline constexpr int kLeaderboardSchemaVersion = 1;

// Malformed file, unknown schema_version, or a results file that lacks what an entry needs.
// CLI commands turn it into a one-line message and exit code 2.
struct LeaderboardError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ShapeEntry {
  std::string label;
  int64_t runs = 0;
  double mean_ns = 0, std_ns = 0, err_ns = 0, best_ns = 0, worst_ns = 0, median_ns = 0;
  double gbps = 0, pct_bandwidth = 0;
  double bytes = 0;     // bytes that must move (0 = unknown)
  double floor_ns = 0;  // bytes / device bandwidth, or as recorded (0 = unknown)
  bool official_pass = false, strict_pass = false;
};

struct Entry {
  std::string device, problem, variant, mode;
  std::string shape_set;           // "test" / "benchmark"; "" in files from before the field (the mode's own)
  std::string commit, date, harness_version;
  std::string timing;              // the run's timing method: "official", "not official: hot", ...; "" if not given
  double flush_bytes = 0;
  double bandwidth_bytes_per_s = 0;
  std::optional<double> score_ns;  // absent for runs that time nothing (test mode)
  bool passed = false;             // every shape ran and passed its checks
  std::string reason;              // why it failed, as the runner put it
  std::vector<ShapeEntry> shapes;

  const ShapeEntry* shape(const std::string& label) const;
};

// An entry's commit for tables: the first `digits` characters of the hash, keeping a "-dirty" suffix (a build from a
// tree with changes: build_info's git_commit), so a table never shows such a build as the plain commit.
std::string short_commit(const std::string& commit, std::size_t digits = 10);

nlohmann::json to_json(const Entry& e);
Entry entry_from_json(const nlohmann::json& j);  // throws LeaderboardError

// Normalises one run of the runner's results (harness/results.hpp) into an entry; `header` is the
// results document holding the run (build.git_commit, date), if any. Throws LeaderboardError.
Entry make_entry(const nlohmann::json& run, const nlohmann::json& header = nlohmann::json::object());
// A results document ({"runs": [...], "build": ...}) gives one entry per run; a bare run gives one.
std::vector<Entry> entries_from_results(const nlohmann::json& doc);

// An entry may become "best" only if it passed, has a score, and was timed (not test mode) over the
// benchmark shapes (not `--shape-set test`, not `--shape`).
bool eligible_for_best(const Entry& e);
// Whether e takes the best slot from `best`: eligible, and over a superset of best's shapes (or as many
// shapes when neither set contains the other) with, on the same shapes, a lower score.
bool replaces_best(const Entry& e, const Entry& best);

// ---- the file ----
nlohmann::json empty_leaderboard();
// Parses and validates; throws LeaderboardError with a one-line reason.
nlohmann::json parse_leaderboard(const std::string& text, const std::string& origin);
// A missing file reads as an empty leaderboard.
nlohmann::json load_leaderboard(const std::string& path);

// Pure merge of one entry: a better eligible entry becomes best and the old best moves to history;
// anything else is appended to history. Nothing is ever dropped.
void merge_entry(nlohmann::json& board, const Entry& e);
// Merges every entry (bests and histories) of `other` into `board`, skipping exact duplicates.
void merge_board(nlohmann::json& board, const nlohmann::json& other);

// Read-merge-write of one results JSON into the file at `path`, under an advisory lock on
// "<path>.lock", written through a temporary file and rename. Throws LeaderboardError (file untouched)
// on a malformed file or results. Returns the merged entries (one per run in the document).
std::vector<Entry> record_result(const std::string& path, const nlohmann::json& results);

// Writes `board` to `path` atomically (temp + rename) under the same lock.
void save_leaderboard(const std::string& path, const nlohmann::json& board);

// Every entry for one (device, problem, variant): best first (if any), then history, newest first.
std::vector<Entry> entries_for(const nlohmann::json& board, const std::string& device, const std::string& problem,
                               const std::string& variant);
std::optional<Entry> best_for(const nlohmann::json& board, const std::string& device, const std::string& problem,
                              const std::string& variant);
std::vector<std::string> board_devices(const nlohmann::json& board);

// ---- rendering (harness leaderboard) ----
struct LeaderboardFilter {
  std::string problem, device;  // empty = all
};
std::string render_leaderboard(const nlohmann::json& board, const LeaderboardFilter& f);

// Reads the whole file at `path` (throws LeaderboardError naming the path if unreadable).
std::string read_text_file(const std::string& path);

}  // namespace harness
