#include "harness/leaderboard.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/atomic_file.hpp"
#include "harness/results.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace harness {

using nlohmann::json;

namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Advisory exclusive lock on a side file; serialises read-merge-write between processes and threads
// (each FileLock opens its own descriptor, so flock excludes threads of one process too).
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw LeaderboardError(path + ": cannot open lock file");
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        ::close(fd_);
        throw LeaderboardError(path + ": flock failed");
      }
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

void write_board(const std::string& path, const json& board) {
  try {
    write_file_atomic(path, board.dump(2) + "\n");
  } catch (const std::runtime_error& ex) {
    throw LeaderboardError(ex.what());
  }
}

}  // namespace

const ShapeEntry* Entry::shape(const std::string& label) const {
  for (const auto& s : shapes)
    if (s.label == label) return &s;
  return nullptr;
}

// ---------------------------------------------------------------- entry <-> json

std::string short_commit(const std::string& commit, std::size_t digits) {
  static const std::string kDirty = "-dirty";
  const bool dirty =
      commit.size() >= kDirty.size() && commit.compare(commit.size() - kDirty.size(), kDirty.size(), kDirty) == 0;
  const std::string hash = dirty ? commit.substr(0, commit.size() - kDirty.size()) : commit;
  return hash.substr(0, digits) + (dirty ? kDirty : "");
}

json to_json(const Entry& e) {
  json shapes = json::array();
  for (const auto& s : e.shapes) {
    shapes.push_back({{"label", s.label},         {"runs", s.runs},
                      {"mean_ns", s.mean_ns},     {"std_ns", s.std_ns},
                      {"err_ns", s.err_ns},       {"best_ns", s.best_ns},
                      {"worst_ns", s.worst_ns},   {"median_ns", s.median_ns},
                      {"gbps", s.gbps},           {"pct_bandwidth", s.pct_bandwidth},
                      {"bytes", s.bytes},         {"floor_ns", s.floor_ns},
                      {"official_pass", s.official_pass}, {"strict_pass", s.strict_pass}});
  }
  json j = {{"device", e.device},   {"problem", e.problem},
            {"variant", e.variant}, {"mode", e.mode},
            {"commit", e.commit},   {"date", e.date},
            {"harness_version", e.harness_version},
            {"flush_bytes", e.flush_bytes},
            {"bandwidth_bytes_per_s", e.bandwidth_bytes_per_s},
            {"passed", e.passed},   {"reason", e.reason},
            {"shapes", shapes}};
  if (!e.shape_set.empty()) j["shape_set"] = e.shape_set;
  if (!e.timing.empty()) j["timing"] = e.timing;
  j["score_ns"] = e.score_ns ? json(*e.score_ns) : json(nullptr);
  return j;
}

namespace {

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

}  // namespace

Entry entry_from_json(const json& j) {
  try {
    if (!j.is_object()) throw LeaderboardError("entry is not an object");
    Entry e;
    e.device = j.at("device").get<std::string>();
    e.problem = j.at("problem").get<std::string>();
    e.variant = j.at("variant").get<std::string>();
    e.mode = get_or<std::string>(j, "mode", "");
    e.shape_set = get_or<std::string>(j, "shape_set", "");
    e.timing = get_or<std::string>(j, "timing", "");
    e.commit = get_or<std::string>(j, "commit", "");
    e.date = get_or<std::string>(j, "date", "");
    e.harness_version = get_or<std::string>(j, "harness_version", "");
    e.flush_bytes = get_or<double>(j, "flush_bytes", 0);
    e.bandwidth_bytes_per_s = get_or<double>(j, "bandwidth_bytes_per_s", 0);
    e.passed = get_or<bool>(j, "passed", false);
    e.reason = get_or<std::string>(j, "reason", "");
    if (j.contains("score_ns") && !j["score_ns"].is_null()) e.score_ns = j["score_ns"].get<double>();
    for (const auto& s : j.at("shapes")) {
      ShapeEntry se;
      se.label = s.at("label").get<std::string>();
      se.runs = get_or<int64_t>(s, "runs", 0);
      se.mean_ns = get_or<double>(s, "mean_ns", 0);
      se.std_ns = get_or<double>(s, "std_ns", 0);
      se.err_ns = get_or<double>(s, "err_ns", 0);
      se.best_ns = get_or<double>(s, "best_ns", 0);
      se.worst_ns = get_or<double>(s, "worst_ns", 0);
      se.median_ns = get_or<double>(s, "median_ns", 0);
      se.gbps = get_or<double>(s, "gbps", 0);
      se.pct_bandwidth = get_or<double>(s, "pct_bandwidth", 0);
      se.bytes = get_or<double>(s, "bytes", 0);
      se.floor_ns = get_or<double>(s, "floor_ns", 0);
      se.official_pass = get_or<bool>(s, "official_pass", false);
      se.strict_pass = get_or<bool>(s, "strict_pass", false);
      e.shapes.push_back(std::move(se));
    }
    return e;
  } catch (const json::exception& ex) {
    throw LeaderboardError(std::string("malformed entry: ") + ex.what());
  }
}

bool eligible_for_best(const Entry& e) {
  // Test mode times one call per shape, and --hot / --graph / --clean-flush time another way: not scores to rank.
  const bool benchmark_shapes = e.shape_set.empty() || e.shape_set == "benchmark";
  const bool official_timing = e.timing.empty() || e.timing == "official";
  return e.passed && e.mode != "test" && benchmark_shapes && official_timing && e.score_ns && std::isfinite(*e.score_ns) &&
         *e.score_ns > 0;
}

// ---------------------------------------------------------------- results -> entry
// The runner's results schema (docs/results-schema.md) is read here and nowhere else.

namespace {

// The first of several spellings that is present and not null.
const json* pick(const json& j, std::initializer_list<std::initializer_list<const char*>> paths) {
  for (const auto& path : paths) {
    const json* cur = &j;
    for (const char* key : path) {
      if (!cur->is_object()) { cur = nullptr; break; }
      auto it = cur->find(key);
      if (it == cur->end() || it->is_null()) { cur = nullptr; break; }
      cur = &*it;
    }
    if (cur) return cur;
  }
  return nullptr;
}

std::string pick_string(const json& j, std::initializer_list<std::initializer_list<const char*>> paths,
                        const std::string& fallback = "") {
  const json* v = pick(j, paths);
  return v && v->is_string() ? v->get<std::string>() : fallback;
}

double pick_number(const json& j, std::initializer_list<std::initializer_list<const char*>> paths,
                   double fallback = 0) {
  const json* v = pick(j, paths);
  return v && v->is_number() ? v->get<double>() : fallback;
}

// A verdict may be a bool, or an object with "pass"/"passed"; absent = not passed.
bool verdict_passed(const json& shape, const std::string& which) {
  const std::string flat = which + "_pass";
  const json* v = pick(shape, {{which.c_str()}, {"verdicts", which.c_str()}, {"check", which.c_str()}, {flat.c_str()}});
  if (!v) return false;
  if (v->is_boolean()) return v->get<bool>();
  const json* p = pick(*v, {{"pass"}, {"passed"}, {"ok"}});
  return p && p->is_boolean() && p->get<bool>();
}

std::string shape_label(const json& s) {
  if (const json* l = pick(s, {{"label"}}); l && l->is_string()) return l->get<std::string>();
  if (const json* l = pick(s, {{"shape"}}); l && l->is_string()) return l->get<std::string>();
  if (const json* p = pick(s, {{"params"}, {"shape"}}); p && p->is_object()) {
    std::string out;
    for (const auto& [k, v] : p->items()) out += (out.empty() ? "" : " ") + k + "=" + v.dump();
    return out;
  }
  throw LeaderboardError("results: a shape has no label");
}

}  // namespace

Entry make_entry(const json& r, const json& header) {
  if (!r.is_object()) throw LeaderboardError("results: not a JSON object");
  Entry e;
  e.device = pick_string(r, {{"device", "name"}, {"device"}});
  e.problem = pick_string(r, {{"problem"}, {"problem", "name"}});
  e.variant = pick_string(r, {{"variant"}, {"variant", "name"}});
  if (e.device.empty() || e.problem.empty() || e.variant.empty())
    throw LeaderboardError("results: device.name, problem and variant are required");
  e.mode = pick_string(r, {{"mode"}}, "benchmark");
  e.shape_set = pick_string(r, {{"shape_set"}});
  e.timing = pick_string(r, {{"timing", "method"}});
  e.commit = pick_string(r, {{"build", "git_commit"}, {"git_commit"}, {"commit"}},
                         pick_string(header, {{"build", "git_commit"}}));
  e.date = pick_string(r, {{"date"}}, pick_string(header, {{"date"}}, utc_now_iso8601()));
  e.harness_version = pick_string(r, {{"harness_version"}}, pick_string(header, {{"harness_version"}}));
  e.flush_bytes = pick_number(r, {{"timing", "flush_bytes"}, {"options", "flush_bytes"}, {"flush_bytes"}});
  e.bandwidth_bytes_per_s = pick_number(r, {{"device", "bandwidth_bytes_per_s"}});

  const json* shapes = pick(r, {{"shapes"}, {"cases"}});
  if (!shapes || !shapes->is_array()) throw LeaderboardError("results: no \"shapes\" array");
  bool all_pass = !shapes->empty();
  bool all_timed = !shapes->empty();
  double log_sum = 0;
  for (const auto& s : *shapes) {
    ShapeEntry se;
    se.label = shape_label(s);
    se.runs = static_cast<int64_t>(pick_number(s, {{"runs"}, {"timing", "runs"}}));
    se.mean_ns = pick_number(s, {{"mean_ns"}, {"timing", "mean_ns"}});
    se.std_ns = pick_number(s, {{"std_ns"}, {"timing", "std_ns"}});
    se.err_ns = pick_number(s, {{"err_ns"}, {"timing", "err_ns"}});
    se.best_ns = pick_number(s, {{"best_ns"}, {"timing", "best_ns"}});
    se.worst_ns = pick_number(s, {{"worst_ns"}, {"timing", "worst_ns"}});
    se.median_ns = pick_number(s, {{"median_ns"}, {"timing", "median_ns"}});
    se.gbps = pick_number(s, {{"gbps"}, {"timing", "gbps"}});
    se.pct_bandwidth = pick_number(s, {{"pct_bandwidth"}, {"timing", "pct_bandwidth"}});
    se.bytes = pick_number(s, {{"bytes"}, {"cost", "bytes"}});
    se.floor_ns = pick_number(s, {{"floor_ns"}, {"cost", "floor_ns"}});
    if (se.floor_ns <= 0 && se.bytes > 0 && e.bandwidth_bytes_per_s > 0)
      se.floor_ns = se.bytes / e.bandwidth_bytes_per_s * 1e9;
    se.official_pass = verdict_passed(s, "official");
    se.strict_pass = verdict_passed(s, "strict");
    const json* st = pick(s, {{"status"}});
    const bool shape_ok = !st || !st->is_string() || st->get<std::string>() == "ok";
    all_pass = all_pass && se.official_pass && shape_ok;
    const bool timed = se.runs > 0 && std::isfinite(se.mean_ns) && se.mean_ns > 0;
    all_timed = all_timed && timed;
    if (timed) log_sum += std::log(se.mean_ns);
    e.shapes.push_back(std::move(se));
  }
  if (const json* p = pick(r, {{"passed"}, {"pass"}}); p && p->is_boolean()) all_pass = all_pass && p->get<bool>();
  if (const json* st = pick(r, {{"status"}}); st && st->is_string() && st->get<std::string>() != "ok") all_pass = false;
  e.passed = all_pass;
  e.reason = pick_string(r, {{"reason"}});
  if (!e.passed && e.reason.empty()) e.reason = e.shapes.empty() ? "no shapes ran" : "a check failed";
  if (const json* sc = pick(r, {{"score_ns"}, {"score", "ns"}}); sc && sc->is_number())
    e.score_ns = sc->get<double>();
  else if (all_timed)
    e.score_ns = std::exp(log_sum / static_cast<double>(e.shapes.size()));
  return e;
}

std::vector<Entry> entries_from_results(const json& doc) {
  std::vector<Entry> out;
  if (doc.is_object() && doc.contains("runs")) {
    if (!doc["runs"].is_array()) throw LeaderboardError("results: \"runs\" is not an array");
    for (const auto& run : doc["runs"]) out.push_back(make_entry(run, doc));
  } else {
    out.push_back(make_entry(doc));
  }
  return out;
}

// ---------------------------------------------------------------- the file

json empty_leaderboard() { return {{"schema_version", kLeaderboardSchemaVersion}, {"devices", json::object()}}; }

json parse_leaderboard(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& ex) {
    throw LeaderboardError(origin + ": malformed JSON (byte " + std::to_string(ex.byte) + ")");
  }
  if (!j.is_object() || !j.contains("schema_version"))
    throw LeaderboardError(origin + ": not a leaderboard (no schema_version)");
  if (!j["schema_version"].is_number_integer() || j["schema_version"].get<int>() != kLeaderboardSchemaVersion)
    throw LeaderboardError(origin + ": unknown schema_version " + j["schema_version"].dump() + " (this harness reads " +
                           std::to_string(kLeaderboardSchemaVersion) + ")");
  if (!j.contains("devices") || !j["devices"].is_object())
    throw LeaderboardError(origin + ": \"devices\" missing or not an object");
  // Validate every entry now, so that a later merge never half-applies to a broken file.
  for (auto& [dev, problems] : j["devices"].items()) {
    if (!problems.is_object()) throw LeaderboardError(origin + ": device \"" + dev + "\" is not an object");
    for (auto& [prob, variants] : problems.items()) {
      if (!variants.is_object()) throw LeaderboardError(origin + ": " + dev + "/" + prob + " is not an object");
      for (auto& [var, slot] : variants.items()) {
        const std::string where = origin + ": " + dev + "/" + prob + "/" + var;
        if (!slot.is_object() || !slot.contains("history") || !slot["history"].is_array())
          throw LeaderboardError(where + ": needs \"best\" and a \"history\" array");
        try {
          if (slot.contains("best") && !slot["best"].is_null()) entry_from_json(slot["best"]);
          for (const auto& h : slot["history"]) entry_from_json(h);
        } catch (const LeaderboardError& ex) {
          throw LeaderboardError(where + ": " + ex.what());
        }
      }
    }
  }
  return j;
}

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw LeaderboardError(path + ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json load_leaderboard(const std::string& path) {
  if (!file_exists(path)) return empty_leaderboard();
  return parse_leaderboard(read_text_file(path), path);
}

// ---------------------------------------------------------------- merging

namespace {

json& slot_for(json& board, const Entry& e) {
  json& slot = board["devices"][e.device][e.problem][e.variant];
  if (!slot.is_object()) slot = json::object();
  if (!slot.contains("best")) slot["best"] = nullptr;
  if (!slot.contains("history")) slot["history"] = json::array();
  return slot;
}

bool slot_holds(const json& slot, const json& ej) {
  if (slot["best"] == ej) return true;
  return std::find(slot["history"].begin(), slot["history"].end(), ej) != slot["history"].end();
}

}  // namespace

bool replaces_best(const Entry& e, const Entry& best) {
  if (!eligible_for_best(e)) return false;
  if (!eligible_for_best(best)) return true;
  // Scores are geometric means over the shapes a run timed: compare like with like. A run over more
  // shapes (all of a smaller run's and others) outranks one over fewer, whatever their scores.
  std::set<std::string> mine, theirs;
  for (const auto& s : e.shapes) mine.insert(s.label);
  for (const auto& s : best.shapes) theirs.insert(s.label);
  if (mine != theirs) {
    if (std::includes(mine.begin(), mine.end(), theirs.begin(), theirs.end())) return true;
    if (std::includes(theirs.begin(), theirs.end(), mine.begin(), mine.end())) return false;
    if (mine.size() != theirs.size()) return mine.size() > theirs.size();
  }
  return *e.score_ns < *best.score_ns;
}

void merge_entry(json& board, const Entry& e) {
  json& slot = slot_for(board, e);
  json ej = to_json(e);
  if (eligible_for_best(e) && slot["best"].is_null()) {
    slot["best"] = std::move(ej);
    return;
  }
  if (!slot["best"].is_null() && replaces_best(e, entry_from_json(slot["best"]))) {
    slot["history"].push_back(slot["best"]);
    slot["best"] = std::move(ej);
    return;
  }
  slot["history"].push_back(std::move(ej));
}

void merge_board(json& board, const json& other) {
  for (const auto& [dev, problems] : other["devices"].items())
    for (const auto& [prob, variants] : problems.items())
      for (const auto& [var, slot] : variants.items()) {
        std::vector<json> all;
        // History first, in recorded order, then the best, so that the best of `other` competes last.
        for (const auto& h : slot["history"]) all.push_back(h);
        if (slot.contains("best") && !slot["best"].is_null()) all.push_back(slot["best"]);
        for (const auto& ej : all) {
          const Entry e = entry_from_json(ej);
          if (slot_holds(slot_for(board, e), to_json(e))) continue;
          merge_entry(board, e);
        }
      }
}

std::vector<Entry> record_result(const std::string& path, const json& results) {
  const std::vector<Entry> entries = entries_from_results(results);
  FileLock lock(path + ".lock");
  json board = load_leaderboard(path);  // throws before anything is written
  for (const auto& e : entries) merge_entry(board, e);
  write_board(path, board);
  return entries;
}

void save_leaderboard(const std::string& path, const json& board) {
  FileLock lock(path + ".lock");
  write_board(path, board);
}

// ---------------------------------------------------------------- queries

namespace {
const json* find_slot(const json& board, const std::string& device, const std::string& problem,
                      const std::string& variant) {
  const json& devs = board["devices"];
  if (!devs.contains(device) || !devs[device].contains(problem) || !devs[device][problem].contains(variant))
    return nullptr;
  return &devs[device][problem][variant];
}
}  // namespace

std::vector<Entry> entries_for(const json& board, const std::string& device, const std::string& problem,
                               const std::string& variant) {
  std::vector<Entry> out;
  const json* slot = find_slot(board, device, problem, variant);
  if (!slot) return out;
  if (slot->contains("best") && !(*slot)["best"].is_null()) out.push_back(entry_from_json((*slot)["best"]));
  const json& h = (*slot)["history"];
  for (auto it = h.rbegin(); it != h.rend(); ++it) out.push_back(entry_from_json(*it));
  return out;
}

std::optional<Entry> best_for(const json& board, const std::string& device, const std::string& problem,
                              const std::string& variant) {
  const json* slot = find_slot(board, device, problem, variant);
  if (!slot || !slot->contains("best") || (*slot)["best"].is_null()) return std::nullopt;
  return entry_from_json((*slot)["best"]);
}

std::vector<std::string> board_devices(const json& board) {
  std::vector<std::string> out;
  for (const auto& [dev, _] : board["devices"].items()) out.push_back(dev);
  return out;
}

}  // namespace harness
