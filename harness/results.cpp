#include "harness/results.hpp"

#include <cmath>
#include <ctime>
#include <limits>
#include <stdexcept>

#include "harness/atomic_file.hpp"
#include "harness/build_info.hpp"

namespace harness {

using nlohmann::json;

std::string to_string(Mode m) {
  switch (m) {
    case Mode::test: return "test";
    case Mode::benchmark: return "benchmark";
    case Mode::leaderboard: return "leaderboard";
    case Mode::profile: return "profile";
  }
  return "?";
}

Mode mode_from_string(const std::string& s) {
  if (s == "test") return Mode::test;
  if (s == "benchmark") return Mode::benchmark;
  if (s == "leaderboard") return Mode::leaderboard;
  if (s == "profile") return Mode::profile;
  throw std::invalid_argument("unknown mode '" + s + "' (valid: test, benchmark, leaderboard, profile)");
}

std::string to_string(ShapeSet s) {
  switch (s) {
    case ShapeSet::test: return "test";
    case ShapeSet::benchmark: return "benchmark";
    case ShapeSet::custom: return "custom";
  }
  return "?";
}

ShapeSet shape_set_from_string(const std::string& s) {
  if (s == "test") return ShapeSet::test;
  if (s == "benchmark") return ShapeSet::benchmark;
  if (s == "custom") return ShapeSet::custom;
  throw std::invalid_argument("unknown shape set '" + s + "' (valid: test, benchmark, custom)");
}

ShapeSet default_shape_set(Mode m) { return m == Mode::test ? ShapeSet::test : ShapeSet::benchmark; }

std::string timing_method(const TimingOptions& t) {
  std::string deviations;
  auto add = [&](const char* what) { deviations += deviations.empty() ? what : std::string(", ") + what; };
  if (!t.flush) add("hot");
  if (t.flush && t.clean_flush) add("clean flush");
  if (t.graph) add("graph");
  if (!t.hide_host) add("host not hidden");
  return deviations.empty() ? "official" : "not official: " + deviations;
}

void RunResult::finalize() {
  std::vector<double> means;
  bool all_timed = !shapes.empty();
  passed = !shapes.empty();
  for (const auto& s : shapes) {
    if (s.stats.runs > 0) means.push_back(s.stats.mean);
    else all_timed = false;
    if (!s.passed()) {
      if (passed) reason = "shape " + std::to_string(s.index) + " (" + s.label + "): " + s.reason;
      passed = false;
    }
  }
  if (shapes.empty()) reason = "no shapes ran";
  score_ns = all_timed ? std::optional<double>(geometric_mean(means)) : std::nullopt;
  status = passed ? "ok" : "failed";
  if (passed) reason.clear();
}

RunResult failed_run(const std::string& problem, const std::string& variant, Mode mode, const std::string& reason) {
  RunResult r;
  r.harness_version = build_info().version;
  r.date = utc_now_iso8601();
  r.device.name = "unknown (no result from the worker)";
  r.device.backend = build_info().backend;
  r.problem = problem;
  r.variant = variant;
  r.mode = mode;
  r.passed = false;
  r.status = "failed";
  r.reason = reason;
  return r;
}

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

// JSON has no NaN / inf: they are written as null and read back as +inf (only error measures use this).
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
double num_or_inf(const json& j) {
  return j.is_null() ? std::numeric_limits<double>::infinity() : j.get<double>();
}

json device_json(const DeviceInfo& d) {
  return {{"name", d.name},
          {"backend", d.backend},
          {"arch", d.arch},
          {"compute_units", d.compute_units},
          {"l2_bytes", d.l2_bytes},
          {"memory_bytes", d.memory_bytes},
          {"bandwidth_bytes_per_s", d.bandwidth_bytes_per_s},
          {"matrix_flops_per_s", d.matrix_flops_per_s},
          {"matrix_flops_source", d.matrix_flops_source},
          {"bandwidth_source", d.bandwidth_source},
          {"empty_call_s", d.empty_call_s},
          {"empty_call_source", d.empty_call_source}};
}

DeviceInfo device_from_json(const json& j) {
  DeviceInfo d;
  d.name = j.at("name").get<std::string>();
  d.backend = j.at("backend").get<std::string>();
  d.arch = j.at("arch").get<std::string>();
  d.compute_units = j.at("compute_units").get<int>();
  d.l2_bytes = j.at("l2_bytes").get<std::size_t>();
  d.memory_bytes = j.at("memory_bytes").get<std::size_t>();
  d.bandwidth_bytes_per_s = j.at("bandwidth_bytes_per_s").get<double>();
  d.matrix_flops_per_s = j.value("matrix_flops_per_s", 0.0);
  d.matrix_flops_source = j.value("matrix_flops_source", std::string());
  d.bandwidth_source = j.at("bandwidth_source").get<std::string>();
  d.empty_call_s = j.value("empty_call_s", 0.0);  // absent in files written before it was measured
  d.empty_call_source = j.value("empty_call_source", std::string());
  return d;
}

json build_json() {
  const auto& b = build_info();
  return {{"compiler", b.cxx_compiler},
          {"gpu_compiler", b.gpu_compiler},
          {"flags", b.flags},
          {"git_commit", b.git_commit},
          {"backend", b.backend}};
}

json official_json(const OfficialVerdict& v) {
  return {{"passed", v.passed},         {"mismatches", v.mismatches}, {"total", v.total},
          {"fraction", v.fraction},     {"allowance", v.allowance},   {"first_locations", v.first_locations}};
}

OfficialVerdict official_from_json(const json& j) {
  OfficialVerdict v;
  v.passed = j.at("passed").get<bool>();
  v.mismatches = j.at("mismatches").get<int64_t>();
  v.total = j.at("total").get<int64_t>();
  v.fraction = j.at("fraction").get<double>();
  v.allowance = j.at("allowance").get<double>();
  v.first_locations = j.at("first_locations").get<std::vector<std::vector<int64_t>>>();
  return v;
}

json strict_json(const StrictVerdict& v) {
  return {{"passed", v.passed}, {"rel_l2", num(v.rel_l2)}, {"max_abs", num(v.max_abs)}, {"limit", v.limit}};
}

StrictVerdict strict_from_json(const json& j) {
  StrictVerdict v;
  v.passed = j.at("passed").get<bool>();
  v.rel_l2 = num_or_inf(j.at("rel_l2"));
  v.max_abs = num_or_inf(j.at("max_abs"));
  v.limit = j.at("limit").get<double>();
  return v;
}

json shape_json(const ShapeResult& s) {
  json params = json::object();
  for (const auto& [k, v] : s.params) params[k] = v;
  json j = {{"index", s.index},
            {"label", s.label},
            {"params", params},
            {"param_order", json::array()},
            {"seed", s.seed},
            {"timed_seeds", s.timed_seeds},
            {"inputs_digest", s.inputs_digest},
            {"runs", s.stats.runs},
            {"mean_ns", s.stats.mean},
            {"std_ns", s.stats.std},
            {"err_ns", s.stats.err},
            {"best_ns", s.stats.best},
            {"worst_ns", s.stats.worst},
            {"median_ns", s.stats.median},
            {"stop_reason", s.stop_reason},
            {"bytes", s.bytes},
            {"flops", s.flops},
            {"floor_ns", s.floor_ns},
            {"gbps", s.gbps},
            {"pct_bandwidth", s.pct_bandwidth},
            {"checks", s.checks},
            {"settle_check", s.settle_check},
            {"host_exposed_timings", s.host_exposed_timings},
            {"repeat_check", s.repeat_check},
            {"repeat_differing", s.repeat_differing},
            {"repeat_max_abs", s.repeat_max_abs},
            {"official", s.official ? official_json(*s.official) : json(nullptr)},
            {"strict", s.strict ? strict_json(*s.strict) : json(nullptr)},
            {"status", s.status},
            {"reason", s.reason}};
  for (const auto& [k, v] : s.params) j["param_order"].push_back(k);
  return j;
}

ShapeResult shape_from_json(const json& j) {
  ShapeResult s;
  s.index = j.at("index").get<int>();
  s.label = j.at("label").get<std::string>();
  for (const auto& k : j.at("param_order")) {
    const auto key = k.get<std::string>();
    s.params.emplace_back(key, j.at("params").at(key).get<int64_t>());
  }
  s.seed = j.at("seed").get<uint64_t>();
  s.timed_seeds = j.at("timed_seeds").get<std::vector<uint64_t>>();
  s.inputs_digest = j.value("inputs_digest", "");  // absent in files written before it existed
  s.stats.runs = j.at("runs").get<int64_t>();
  s.stats.mean = j.at("mean_ns").get<double>();
  s.stats.std = j.at("std_ns").get<double>();
  s.stats.err = j.at("err_ns").get<double>();
  s.stats.best = j.at("best_ns").get<double>();
  s.stats.worst = j.at("worst_ns").get<double>();
  s.stats.median = j.at("median_ns").get<double>();
  s.stop_reason = j.at("stop_reason").get<std::string>();
  s.bytes = j.at("bytes").get<double>();
  s.flops = j.at("flops").get<double>();
  s.floor_ns = j.value("floor_ns", 0.0);  // absent in files written before floors were recorded
  s.gbps = j.at("gbps").get<double>();
  s.pct_bandwidth = j.at("pct_bandwidth").get<double>();
  s.checks = j.at("checks").get<int64_t>();
  s.settle_check = j.value("settle_check", std::string("not run"));
  s.host_exposed_timings = j.value("host_exposed_timings", 0);
  s.repeat_check = j.value("repeat_check", std::string("not run"));  // absent in files written before it existed
  s.repeat_differing = j.value("repeat_differing", int64_t{0});
  s.repeat_max_abs = j.value("repeat_max_abs", 0.0);
  if (!j.at("official").is_null()) s.official = official_from_json(j.at("official"));
  if (!j.at("strict").is_null()) s.strict = strict_from_json(j.at("strict"));
  s.status = j.at("status").get<std::string>();
  s.reason = j.at("reason").get<std::string>();
  return s;
}

}  // namespace

json to_json(const RunResult& r) {
  json shapes = json::array();
  for (const auto& s : r.shapes) shapes.push_back(shape_json(s));
  return {{"harness_version", r.harness_version},
          {"date", r.date},
          {"device", device_json(r.device)},
          {"problem", r.problem},
          {"variant", r.variant},
          {"mode", to_string(r.mode)},
          {"shape_set", to_string(r.drawn_from())},
          {"timing",
           {{"flush", r.timing.flush},
            {"flush_bytes", r.timing.flush_bytes},
            {"clean_flush", r.timing.clean_flush},
            {"hide_host", r.timing.hide_host},
            {"graph", r.timing.graph},
            {"method", r.timing.method},
            {"device_method", r.timing.device_method}}},
          {"seeds",
           {{"seed_override", r.seeds.seed_override ? json(*r.seeds.seed_override) : json(nullptr)},
            {"secret_seed", r.seeds.secret_seed},
            {"inputs_from", r.seeds.inputs_from.empty() ? json(nullptr) : json(r.seeds.inputs_from)}}},
          {"check_reference", r.check_reference},
          {"shapes", shapes},
          {"score_ns", r.score_ns ? num(*r.score_ns) : json(nullptr)},
          {"passed", r.passed},
          {"status", r.status},
          {"reason", r.reason}};
}

RunResult run_from_json(const json& j) {
  RunResult r;
  r.harness_version = j.at("harness_version").get<std::string>();
  r.date = j.at("date").get<std::string>();
  r.device = device_from_json(j.at("device"));
  r.problem = j.at("problem").get<std::string>();
  r.variant = j.at("variant").get<std::string>();
  r.mode = mode_from_string(j.at("mode").get<std::string>());
  if (j.contains("shape_set"))  // absent in files from before the field: the mode's own
    r.shape_set = shape_set_from_string(j.at("shape_set").get<std::string>());
  const auto& t = j.at("timing");
  r.timing.flush = t.at("flush").get<bool>();
  r.timing.flush_bytes = t.at("flush_bytes").get<std::size_t>();
  r.timing.clean_flush = t.value("clean_flush", false);  // absent in files from before the option
  r.timing.hide_host = t.at("hide_host").get<bool>();
  r.timing.graph = t.at("graph").get<bool>();
  r.timing.method = t.at("method").get<std::string>();
  r.timing.device_method = t.value("device_method", std::string());
  const auto& sd = j.at("seeds");
  if (!sd.at("seed_override").is_null()) r.seeds.seed_override = sd.at("seed_override").get<uint64_t>();
  r.seeds.secret_seed = sd.at("secret_seed").get<bool>();
  if (sd.contains("inputs_from") && !sd.at("inputs_from").is_null()) r.seeds.inputs_from = sd.at("inputs_from").get<std::string>();
  r.check_reference = j.at("check_reference").get<std::string>();
  for (const auto& s : j.at("shapes")) r.shapes.push_back(shape_from_json(s));
  if (!j.at("score_ns").is_null()) r.score_ns = j.at("score_ns").get<double>();
  r.passed = j.at("passed").get<bool>();
  r.status = j.at("status").get<std::string>();
  r.reason = j.at("reason").get<std::string>();
  return r;
}

json results_document(const std::vector<RunResult>& runs) {
  json arr = json::array();
  for (const auto& r : runs) arr.push_back(to_json(r));
  bool all_passed = !runs.empty();
  for (const auto& r : runs) all_passed = all_passed && r.passed;
  return {{"schema_version", kResultsSchemaVersion},
          {"harness_version", build_info().version},
          {"date", utc_now_iso8601()},
          {"build", build_json()},
          {"passed", all_passed},
          {"runs", arr}};
}

void write_results_file(const std::string& path, const std::vector<RunResult>& runs) {
  write_file_atomic(path, results_document(runs).dump(2) + "\n");
}

}  // namespace harness
