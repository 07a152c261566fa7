// `harness run <problem> --variant a,b ...`: validates the command line, runs each variant in a
// worker process (or in-process with --no-isolate), prints a table per variant, writes the JSON.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "harness/atomic_file.hpp"
#include "harness/cli.hpp"
#include "harness/cli_table.hpp"
#include "harness/device.hpp"
#include "harness/leaderboard.hpp"
#include "harness/matrix_rate.hpp"
#include "harness/runner.hpp"
#include "harness/term.hpp"
#include "harness/worker.hpp"

namespace harness::cli {
namespace {

// Official test/benchmark limit for GPU variants; host variants on a few cores need far longer
// (mla_decode's largest test shape alone takes minutes on 2 cores).
constexpr double kDefaultGpuTimeout = 900;
constexpr double kDefaultCpuTimeout = 4 * 3600;

struct RunArgs {
  std::string problem;
  std::vector<std::string> variants;
  std::string mode = "test";
  std::string shapes = "all";
  std::string shape_set;  // "": the mode's own
  std::vector<std::string> custom_shapes;  // --shape "name=value ...", one per shape
  uint64_t seed = 0;
  uint64_t secret_seed = 0;
  std::string json_path;
  std::string inputs_dir;
  int device = 0;
  bool hot = false, clean_flush = false, graph = false, oracle = false, no_isolate = false;
  bool record = false;  // merge the results into the local leaderboard (harness/leaderboard.hpp)
  std::string leaderboard = "leaderboard.json";
  std::size_t flush_bytes = 0;
  int fresh = 0;  // test mode: checked calls on fresh inputs after each shape's own
  double timeout_s = 0;  // 0: kDefaultGpuTimeout / kDefaultCpuTimeout by the variant's backend
  // Hidden, set by the parent for its workers.
  std::string worker_result;
  std::string secret_seed_file;
  bool progress = false;
  bool secret_from_file = false;
  // Which optional flags were given.
  CLI::Option *seed_opt = nullptr, *secret_opt = nullptr, *flush_opt = nullptr;
};

// `--shape "bs=8 kv=2048 seed=7"`: the parameters named replace those of `base` (the first shape of the
// mode's own list); names are the problem's parameters and "seed", values whole numbers.
ShapeCase parse_custom_shape(const Problem& p, const std::string& spec, const ShapeCase& base) {
  ShapeCase s = base;
  s.official_reference_us.reset();
  std::string names;
  for (const auto& kv : base.params) names += kv.first + ", ";
  names += "seed";
  std::string text = spec;
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream in(text);
  std::string tok;
  bool any = false;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError(fmt::format("--shape '{}': '{}' is not name=value (names: {})", spec, tok, names));
    const std::string key = tok.substr(0, eq), value = tok.substr(eq + 1);
    std::size_t used = 0;
    long long n = -1;
    try {
      n = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || n < 0)
      throw UsageError(fmt::format("--shape '{}': {} must be a whole number >= 0, got '{}'", spec, key, value));
    if (key == "seed") {
      s.seed = static_cast<uint64_t>(n);
    } else {
      auto it = std::find_if(s.params.begin(), s.params.end(), [&](const auto& kv) { return kv.first == key; });
      if (it == s.params.end())
        throw UsageError(fmt::format("--shape '{}': unknown parameter '{}' (names: {})", spec, key, names));
      it->second = n;
    }
    any = true;
  }
  if (!any) throw UsageError(fmt::format("--shape '{}': give name=value pairs (names: {})", spec, names));
  if (const std::string why = p.shape_error(s); !why.empty())
    throw UsageError(fmt::format("--shape '{}': {}", spec, why));
  return s;
}

RunOptions to_run_options(const RunArgs& a, const Problem& p, Mode mode) {
  RunOptions o;
  o.mode = mode;
  if (!a.shape_set.empty()) {
    try {
      o.shape_set = shape_set_from_string(a.shape_set);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--shape-set: ") + e.what());
    }
  }
  if (!a.custom_shapes.empty()) {
    if (o.shape_set && *o.shape_set != ShapeSet::custom)
      throw UsageError("--shape gives the shapes (the custom set): drop --shape-set " + a.shape_set);
    const ShapeCase base = set_shapes(p, default_shape_set(mode)).at(0);
    for (const auto& spec : a.custom_shapes) o.custom_shapes.push_back(parse_custom_shape(p, spec, base));
  } else if (o.shape_set == ShapeSet::custom) {
    throw UsageError("--shape-set custom: give the shapes with --shape \"name=value ...\"");
  }
  if (a.record && run_shape_set(o) != default_shape_set(mode))
    throw UsageError("--record: a " + to_string(mode) + "-mode run over the " + to_string(run_shape_set(o)) +
                     " shapes does not rank (drop --shape-set / --shape or --record)");
  const std::vector<ShapeCase> shapes = run_shapes(p, o);
  o.shape_indices = parse_shape_list(a.shapes, shapes.size(),
                                     fmt::format("{} {} shapes", p.name(), to_string(run_shape_set(o))));
  if (a.seed_opt->count()) o.seed = a.seed;
  if (a.secret_opt->count() || a.secret_from_file) o.secret_seed = a.secret_seed;
  if (mode == Mode::profile && (a.hot || a.graph || a.clean_flush))
    throw UsageError("--hot / --graph / --clean-flush: profile mode times nothing (the profiler sees one plain call per shape)");
  if (a.hot && a.clean_flush) throw UsageError("--clean-flush: not with --hot (there is no flush to clean)");
  o.timing.flush = !a.hot;
  o.timing.clean_flush = a.clean_flush;
  o.timing.graph = a.graph;
  if (a.flush_opt->count()) {
    o.timing.flush_bytes = a.flush_bytes;
    o.flush_bytes_given = true;
  }
  o.oracle = a.oracle;
  if (a.fresh < 0) throw UsageError("--fresh: a count of fresh inputs, 0 or more");
  if (a.fresh > 0 && mode != Mode::test)
    throw UsageError("--fresh: test mode only (leaderboard mode already draws fresh inputs for its timed calls)");
  if (a.fresh > 0 && !a.inputs_dir.empty()) throw UsageError("--fresh: not with --inputs (the inputs are fixed)");
  o.fresh = a.fresh;
  if (!a.inputs_dir.empty()) {
    if (mode == Mode::leaderboard)
      throw UsageError("--inputs: leaderboard mode draws fresh inputs before every timed call (use test or benchmark)");
    if (o.shape_indices.size() != 1)
      throw UsageError("--inputs holds the tensors of one shape: select it with --shapes N");
    const std::string wrong = check_input_files(p, shapes.at(o.shape_indices[0]), a.inputs_dir);
    if (!wrong.empty()) throw UsageError(wrong);
    o.inputs_dir = a.inputs_dir;
  }
  return o;
}

// Devices of this process, created on first use (GPU ones only ever inside a worker or --no-isolate).
Device& device_for(const VariantEntry& v, int index) {
  static std::map<int, std::unique_ptr<Device>> devices;  // key -1: the host
  const int key = v.backend == Backend::cpu ? -1 : index;
  auto& d = devices[key];
  if (!d) {
    if (v.backend == Backend::cpu) {
      d = make_cpu_device();
    } else {
#if defined(HARNESS_WITH_GPU)
      d = make_gpu_device(index);
#else
      throw UsageError("variant '" + v.name + "' needs a GPU build");
#endif
    }
  }
  return *d;
}

RunResult run_in_process(const Problem& p, const VariantEntry& v, const RunOptions& o, int device, bool progress) {
  ProgressLine line(progress);
  return run_variant(device_for(v, device), p, v, o, [&](const std::string& s) { line.update(s); });
}

uint64_t read_secret_file(const std::string& path) {
  const std::string text = read_file(path);
  std::filesystem::remove(path);
  return std::stoull(text);
}

std::string write_secret_file(uint64_t secret) {
  const std::string path = temp_result_path() + ".secret";
  const mode_t old = ::umask(077);
  std::ofstream(path) << secret;
  ::umask(old);
  return path;
}

std::vector<std::string> worker_argv(const RunArgs& a, const std::string& variant, const std::string& result,
                                     const std::string& secret_file) {
  std::vector<std::string> v = {self_executable(), "run", a.problem, "--variant", variant, "--mode", a.mode,
                                "--shapes", a.shapes, "--device", std::to_string(a.device), "--worker", result};
  if (!a.shape_set.empty()) v.insert(v.end(), {"--shape-set", a.shape_set});
  for (const auto& s : a.custom_shapes) v.insert(v.end(), {"--shape", s});
  if (a.seed_opt->count()) v.insert(v.end(), {"--seed", std::to_string(a.seed)});
  if (!secret_file.empty()) v.insert(v.end(), {"--secret-seed-file", secret_file});
  if (a.flush_opt->count()) v.insert(v.end(), {"--flush-bytes", std::to_string(a.flush_bytes)});
  if (a.hot) v.push_back("--hot");
  if (a.clean_flush) v.push_back("--clean-flush");
  if (a.graph) v.push_back("--graph");
  if (a.oracle) v.push_back("--oracle");
  if (a.fresh > 0) v.insert(v.end(), {"--fresh", std::to_string(a.fresh)});
  if (!a.inputs_dir.empty()) v.insert(v.end(), {"--inputs", a.inputs_dir});
  if (ProgressLine::stderr_is_terminal()) v.push_back("--progress");
  return v;
}

RunResult run_isolated(const RunArgs& a, const Mode mode, const VariantEntry& v) {
  const std::string& variant = v.name;
  const double timeout_s =
      a.timeout_s > 0 ? a.timeout_s : (v.backend == Backend::cpu ? kDefaultCpuTimeout : kDefaultGpuTimeout);
  const std::string result = temp_result_path();
  const std::string secret_file = a.secret_opt->count() ? write_secret_file(a.secret_seed) : std::string();
  WorkerOutcome w;
  try {
    w = run_worker(worker_argv(a, variant, result, secret_file), result, timeout_s);
  } catch (...) {
    if (!secret_file.empty()) std::filesystem::remove(secret_file);
    throw;
  }
  if (!secret_file.empty()) std::filesystem::remove(secret_file);
  if (ProgressLine::stderr_is_terminal()) std::fputs("\r\x1b[K", stderr);  // a killed worker's progress line
  if (!w.ok) return failed_run(a.problem, variant, mode, w.reason);
  try {
    return run_from_json(nlohmann::json::parse(w.result));
  } catch (const std::exception& e) {
    return failed_run(a.problem, variant, mode, std::string("unreadable worker result: ") + e.what());
  }
}

// The worker side: one variant, in this process, result to a file.
int run_worker_side(RunArgs& a, const Problem& p, const VariantEntry& v, Mode mode) {
  if (!a.secret_seed_file.empty()) {
    a.secret_seed = read_secret_file(a.secret_seed_file);
    a.secret_from_file = true;
  }
  RunOptions o = to_run_options(a, p, mode);
  const RunResult r = run_in_process(p, v, o, a.device, a.progress);
  write_file_atomic(a.worker_result, to_json(r).dump(2) + "\n");
  // The result is safe; skip static destructors, whose device teardown can fail (and abort) after
  // a sticky GPU error.
  std::fflush(nullptr);
  std::_Exit(kExitOk);
}

int run_command(RunArgs& a) {
  const Problem& p = require_problem(a.problem);
  Mode mode;
  try {
    mode = mode_from_string(a.mode);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const std::vector<const VariantEntry*> variants = select_variants(p, a.variants);
  if (variants.empty()) throw UsageError("no variant given (--variant name[,name...])");
  const RunOptions o = to_run_options(a, p, mode);  // validates --shapes
  try {
    // A malformed HARNESS_MATRIX_TFLOPS / HARNESS_MATRIX8_TFLOPS is a usage error, found before any run.
    (void)matrix_rate_for("", MatrixOperands::bf16);
    (void)matrix_rate_for("", MatrixOperands::eight_bit);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (!a.json_path.empty()) {
    const auto dir = std::filesystem::path(a.json_path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      throw UsageError("--json " + a.json_path + ": directory " + dir.string() + " does not exist");
  }

  if (!a.worker_result.empty()) {
    if (variants.size() != 1) throw UsageError("--worker runs exactly one variant");
    return run_worker_side(a, p, *variants[0], mode);
  }
  std::vector<RunResult> results;
  for (const auto* v : variants) {
    RunResult r;
    if (a.no_isolate) {
      try {
        r = run_in_process(p, *v, o, a.device, ProgressLine::stderr_is_terminal());
      } catch (const UsageError&) {
        throw;
      } catch (const std::exception& e) {
        r = failed_run(p.name(), v->name, mode, e.what());
      }
    } else {
      r = run_isolated(a, mode, *v);
    }
    r.shape_set = run_shape_set(o);  // also for a worker that left no results
    print_run_table(r);
    std::fflush(stdout);
    results.push_back(std::move(r));
    if (!a.json_path.empty()) write_results_file(a.json_path, results);  // earlier runs survive a later crash
  }
  if (a.record) {
    try {
      for (const auto& e : record_result(a.leaderboard, results_document(results)))
        std::printf("recorded %s:%s into %s%s\n", e.problem.c_str(), e.variant.c_str(), a.leaderboard.c_str(),
                    eligible_for_best(e) ? "" : " (history only)");
    } catch (const LeaderboardError& e) {
      throw UsageError(e.what());
    }
  }
  bool all = true;
  for (const auto& r : results) all = all && r.passed;
  return all ? kExitOk : kExitFailed;
}

Command setup(CLI::App& root) {
  auto a = std::make_shared<RunArgs>();
  auto* app = root.add_subcommand("run", "Check and time variants of a problem");
  app->add_option("problem", a->problem, "Problem name (see `harness list`)")->required();
  app->add_option("--variant,-v", a->variants, "Variant name(s), comma-separated; \"gpu\" = every GPU variant of this build, \"all\" = every variant")->required()->delimiter(',');
  app->add_option("--mode,-m", a->mode, "test | benchmark | leaderboard | profile (one checked warm-up, then one call per "
                 "benchmark shape inside a profiler capture range: ncu --profile-from-start off, nsys "
                 "--capture-range=cudaProfilerApi)")->capture_default_str();
  app->add_option("--shapes", a->shapes, "all, or comma-separated shape indices")->capture_default_str();
  app->add_option("--shape-set", a->shape_set,
                  "test | benchmark: the shape list to draw from (default: the mode's own; e.g. --mode benchmark "
                  "--shape-set test times the test shapes; such runs label shapes \"test/...\" and never rank)");
  app->add_option("--shape", a->custom_shapes,
                  "A shape of your own, e.g. \"bs=8 kv=2048\" (repeat for more; parameters not named, and the seed, "
                  "come from the mode's first shape; labels \"custom/...\", never ranked)")
      ->allow_extra_args(false);
  a->seed_opt = app->add_option("--seed", a->seed, "Replace every shape's seed");
  a->secret_opt = app->add_option("--secret-seed", a->secret_seed, "Combine each shape seed with this (Cantor pairing)");
  app->add_option("--json", a->json_path, "Write results JSON here (atomically, after every variant)");
  app->add_option("--inputs", a->inputs_dir,
                  "Load the inputs of the one selected shape from DIR/<tensor>.bin (raw bytes, official layouts; "
                  "e.g. dumped by scripts/export_check.py --dump-inputs) instead of generating them");
  app->add_option("--device", a->device, "GPU index")->capture_default_str();
  app->add_flag("--hot", a->hot, "No cache flush before timed calls (not the official method)");
  app->add_flag("--clean-flush", a->clean_flush,
                "After each flush, read a clean buffer of twice the last-level cache, so the flush's dirty lines are "
                "written back before the start event (not the official method: the official time minus this one is "
                "what the dirty lines cost the call; this one minus --hot is what the cold misses cost)");
  app->add_flag("--graph", a->graph, "Time graph replays (not the official method)");
  a->flush_opt = app->add_option("--flush-bytes", a->flush_bytes, "Bytes of the cache flush");
  app->add_flag("--oracle", a->oracle, "Check against the float64 oracle instead of the GPU reference");
  app->add_option("--fresh", a->fresh,
                  "Test mode: after each shape's own check, check N more calls on fresh inputs (the seeds leaderboard "
                  "mode draws; a failure names its seed: rerun it with --seed and without --secret-seed)")
      ->capture_default_str();
  app->add_option("--timeout", a->timeout_s,
                  "Seconds a worker may run before its process group is killed (default: 900 for GPU variants, "
                  "14400 for cpu variants)");
  app->add_flag("--no-isolate", a->no_isolate, "Run variants in this process (no crash isolation)");
  app->add_flag("--record", a->record, "Merge the results into the leaderboard file");
  app->add_option("--leaderboard", a->leaderboard, "Leaderboard file for --record")->capture_default_str();
  app->add_option("--worker", a->worker_result)->group("");
  app->add_option("--secret-seed-file", a->secret_seed_file)->group("");
  app->add_flag("--progress", a->progress)->group("");
  return {app, [a] { return run_command(*a); }};
}

}  // namespace
}  // namespace harness::cli

HARNESS_REGISTER_COMMAND("run", harness::cli::setup);
