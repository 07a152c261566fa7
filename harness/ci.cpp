#include "harness/ci.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "harness/build_info.hpp"
#include "harness/problem.hpp"
#include "harness/report.hpp"
#include "harness/variant_registry.hpp"
#include "harness/worker.hpp"

extern char** environ;

namespace harness {

using nlohmann::json;

std::pair<int, int> parse_shard(const std::string& s) {
  const auto slash = s.find('/');
  if (slash == std::string::npos) throw std::invalid_argument("--shard wants i/n, got '" + s + "'");
  try {
    std::size_t p1 = 0, p2 = 0;
    const int i = std::stoi(s.substr(0, slash), &p1);
    const int n = std::stoi(s.substr(slash + 1), &p2);
    if (p1 == slash && p2 == s.size() - slash - 1 && n >= 1 && i >= 1 && i <= n) return {i, n};
  } catch (const std::logic_error&) {
  }
  throw std::invalid_argument("--shard wants i/n with 1 <= i <= n, got '" + s + "'");
}

double parse_fraction(const std::string& s) {
  try {
    std::size_t used = 0;
    const bool percent = !s.empty() && s.back() == '%';
    const std::string num = percent ? s.substr(0, s.size() - 1) : s;
    const double v = std::stod(num, &used);
    if (used == num.size() && std::isfinite(v) && v >= 0) return percent ? v / 100.0 : v;
  } catch (const std::logic_error&) {
  }
  throw std::invalid_argument("expected a fraction like 5% or 0.05, got '" + s + "'");
}

namespace {

bool listed(const std::vector<std::string>& list, const std::string& name) {
  return list.empty() || std::find(list.begin(), list.end(), name) != list.end();
}

bool in_shard(std::size_t k, const CiOptions& o) {
  return static_cast<int>(k % static_cast<std::size_t>(o.shard_count)) == o.shard_index - 1;
}

}  // namespace

std::vector<CiJob> select_jobs(const CiOptions& o) {
  const Backend backend = build_info().backend == "cpu" ? Backend::cpu : Backend::gpu;
  std::vector<CiJob> all;
  for (const auto& v : variant_registry()) {
    if (v.backend != backend || !listed(o.problems, v.problem)) continue;
    const bool named = std::find(o.variants.begin(), o.variants.end(), v.name) != o.variants.end();
    if ((v.flags & kVariantPlanted) && !named) continue;
    if (!o.variants.empty() && !named) continue;
    all.push_back({v.problem, v.name});
  }
  std::sort(all.begin(), all.end(), [](const CiJob& a, const CiJob& b) {
    return std::tie(a.problem, a.variant) < std::tie(b.problem, b.variant);
  });
  std::vector<CiJob> out;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (in_shard(k, o)) out.push_back(all[k]);
  return out;
}

// ---------------------------------------------------------------- running one job

namespace {

// Runs argv, inheriting stdout/stderr; returns the exit status, or 128 + signal.
int spawn_and_wait(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot start " + args[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

CiExecutor reexec_executor(const CiOptions& o) {
  const std::string self = self_executable();
  return [self, o](const CiJob& job) {
    CiRun r;
    r.results_path = (std::filesystem::path(o.json_dir) / (job.problem + "__" + job.variant + ".json")).string();
    std::filesystem::remove(r.results_path);
    std::vector<std::string> args = {self, "run", job.problem, "--variant", job.variant,
                                     "--mode", o.mode, "--json", r.results_path};
    args.insert(args.end(), o.run_args.begin(), o.run_args.end());
    int rc = 0;
    try {
      rc = spawn_and_wait(args);
    } catch (const std::exception& ex) {
      r.error = ex.what();
      return r;
    }
    try {
      r.results = json::parse(read_text_file(r.results_path));
    } catch (const std::exception&) {
      r.error = "harness run exited with " + std::to_string(rc) + " and wrote no readable results";
      r.usage_error = rc == kCiUsage;
    }
    return r;
  };
}

// ---------------------------------------------------------------- judging

std::string to_string(CiStatus s) {
  switch (s) {
    case CiStatus::ok: return "ok";
    case CiStatus::faster: return "faster";
    case CiStatus::new_entry: return "new";
    case CiStatus::slower: return "SLOWER";
    case CiStatus::failed: return "FAILED";
    case CiStatus::crashed: return "CRASHED";
    case CiStatus::usage: return "USAGE";
  }
  return "?";
}

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

// "label (n elements differ)" for each shape of the job's run whose repeat_check says "differs".
std::vector<std::string> non_repeatable_shapes(const json& results, const CiJob& job) {
  std::vector<std::string> out;
  for (const auto& r : results.value("runs", json::array())) {
    if (r.value("problem", "") != job.problem || r.value("variant", "") != job.variant) continue;
    for (const auto& s : r.value("shapes", json::array()))
      if (s.value("repeat_check", "") == "differs")
        out.push_back(s.value("label", "?") + " (" + std::to_string(s.value("repeat_differing", int64_t{0})) +
                      " elements differ)");
  }
  return out;
}

CiOutcome evaluate_run(const CiJob& job, const CiRun& run, const json& baseline, double max_slowdown,
                       bool require_repeatable) {
  CiOutcome out;
  out.job = job;
  out.results_path = run.results_path;
  if (!run.error.empty() || !run.results) {
    out.status = run.usage_error ? CiStatus::usage : CiStatus::crashed;
    out.message = run.error.empty() ? "no results" : run.error;
    return out;
  }
  try {
    for (auto& e : entries_from_results(*run.results))
      if (e.problem == job.problem && e.variant == job.variant) out.run = std::move(e);
  } catch (const LeaderboardError& ex) {
    out.status = CiStatus::crashed;
    out.message = std::string("unreadable results: ") + ex.what();
    return out;
  }
  if (!out.run) {
    out.status = CiStatus::crashed;
    out.message = "the results hold no run of " + job.problem + ":" + job.variant;
    return out;
  }
  if (!out.run->passed) {
    out.status = CiStatus::failed;
    out.message = out.run->reason;
    return out;
  }
  if (require_repeatable) {
    if (const auto shapes = non_repeatable_shapes(*run.results, job); !shapes.empty()) {
      out.status = CiStatus::failed;
      out.message = "not bit-repeatable: " + shapes.front() +
                    (shapes.size() > 1 ? " and " + std::to_string(shapes.size() - 1) + " more shapes" : "");
      return out;
    }
  }
  if (out.run->mode == "test") {  // one untimed-quality call per shape: nothing to compare
    out.message = "test mode: correctness only";
    return out;
  }
  out.baseline = best_for(baseline, out.run->device, job.problem, job.variant);
  if (!out.baseline) {
    out.status = CiStatus::new_entry;
    out.message = "no baseline on " + out.run->device;
    return out;
  }
  out.comparison = compare_entries(*out.baseline, *out.run, "baseline", "this run");
  const ShapeDelta* worst = nullptr;
  bool any_faster = false;
  for (const auto& d : out.comparison->shapes) {
    if (d.ratio > 1.0 + max_slowdown && d.z > kSignificantZ && (!worst || d.ratio > worst->ratio)) worst = &d;
    any_faster = any_faster || (d.significant && d.ratio < 1.0);
  }
  if (worst) {
    out.status = CiStatus::slower;
    out.message = worst->label + ": " + fmt("%.3fx", worst->ratio) + " the baseline (z " + fmt("%.1f", worst->z) +
                  ", threshold " + fmt("%.1f%%", 100 * max_slowdown) + ")";
  } else {
    out.status = any_faster ? CiStatus::faster : CiStatus::ok;
    if (out.comparison->geomean_ratio) out.message = "geomean " + fmt("%.3fx", *out.comparison->geomean_ratio);
  }
  if (!out.comparison->only_a.empty())
    out.message += (out.message.empty() ? "" : "; ") + std::to_string(out.comparison->only_a.size()) +
                   " baseline shape(s) not timed";
  return out;
}

int ci_exit_code(const std::vector<CiOutcome>& outcomes) {
  int code = kCiOk;
  for (const auto& o : outcomes)
    if (o.status == CiStatus::usage) return kCiUsage;
  for (const auto& o : outcomes) {
    if (o.status == CiStatus::failed || o.status == CiStatus::crashed) return kCiFailed;
    if (o.status == CiStatus::slower) code = kCiSlower;
  }
  return code;
}

std::string ci_summary_markdown(const std::vector<CiOutcome>& outcomes, const CiOptions& o) {
  const int code = ci_exit_code(outcomes);
  std::string out = "## harness ci: ";
  out += code == kCiOk       ? "passed"
         : code == kCiFailed ? "correctness failure or crash"
         : code == kCiSlower ? "performance regression"
                             : "bad command line";
  out += " (exit " + std::to_string(code) + ")\n\n";
  out += "baseline `" + o.baseline + "`, max slowdown " + fmt("%.1f%%", 100 * o.max_slowdown) +
         " and z > 3, shard " + std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count) + ", " +
         std::to_string(outcomes.size()) + " job(s)\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : outcomes) {
    const auto score = [](const std::optional<Entry>& e) {
      return e && e->score_ns ? fmt_us(*e->score_ns) : std::string("-");
    };
    std::string ratio = "-";
    if (c.comparison && c.comparison->geomean_ratio) ratio = fmt("%.3f", *c.comparison->geomean_ratio);
    rows.push_back({c.job.problem, c.job.variant, to_string(c.status), score(c.run), score(c.baseline), ratio,
                    c.message});
  }
  out += format_table({"problem", "variant", "status", "score (us)", "baseline (us)", "ratio", "note"}, rows,
                      TableStyle::markdown);
  for (const auto& c : outcomes)
    if (c.status == CiStatus::slower && c.comparison) {
      out += "\n### " + c.job.problem + ":" + c.job.variant + "\n\n";
      out += render_comparison(*c.comparison, CompareFormat::md);
    }
  return out;
}

// ---------------------------------------------------------------- the command

int run_ci(const CiOptions& opts, const CiExecutor& exec, std::ostream& log) {
  const json baseline = load_leaderboard(opts.baseline);  // LeaderboardError -> caller: exit 2
  std::vector<std::pair<CiJob, CiRun>> runs;
  if (!opts.results_files.empty()) {
    std::size_t k = 0;
    for (const auto& path : opts.results_files) {
      CiRun r;
      r.results_path = path;
      json doc;
      std::vector<Entry> entries;
      try {
        doc = json::parse(read_text_file(path));
        entries = entries_from_results(doc);
      } catch (const std::exception& ex) {
        r.error = path + ": " + ex.what();
        runs.push_back({{"?", path}, r});
        continue;
      }
      r.results = doc;
      for (const auto& e : entries) {
        if (!listed(opts.problems, e.problem) || !listed(opts.variants, e.variant)) continue;
        if (in_shard(k++, opts)) runs.push_back({{e.problem, e.variant}, r});
      }
    }
  } else {
    for (const auto& job : select_jobs(opts)) {
      log << "ci: running " << job.problem << ":" << job.variant << "\n" << std::flush;
      runs.push_back({job, exec(job)});
    }
  }
  std::vector<CiOutcome> outcomes;
  for (const auto& [job, r] : runs) {
    outcomes.push_back(evaluate_run(job, r, baseline, opts.max_slowdown, opts.require_repeatable));
    const auto& c = outcomes.back();
    log << "ci: " << job.problem << ":" << job.variant << " " << to_string(c.status)
        << (c.message.empty() ? "" : " (" + c.message + ")") << "\n";
  }
  const std::string summary = ci_summary_markdown(outcomes, opts);
  if (!opts.summary_path.empty()) {
    std::ofstream f(opts.summary_path, std::ios::app);
    f << summary;
    if (!f) log << "ci: cannot write the summary to " << opts.summary_path << "\n";
  }
  const int code = ci_exit_code(outcomes);
  log << "ci: exit " << code << "\n";
  return code;
}

}  // namespace harness
