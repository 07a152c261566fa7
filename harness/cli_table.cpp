#include "harness/cli_table.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace harness::cli {

std::string format_duration_ns(double ns) {
  if (!(ns > 0)) return "-";
  if (ns < 1e3) return fmt::format("{:.1f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.2f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.3f} ms", ns / 1e6);
  return fmt::format("{:.3f} s", ns / 1e9);
}

namespace {

std::string official_cell(const ShapeResult& s) {
  if (!s.official) return "-";
  const auto& o = *s.official;
  return fmt::format("{} {}/{} ({:.2f}%)", o.passed ? "ok" : "FAIL", o.mismatches, o.total, 100 * o.fraction);
}

std::string strict_cell(const ShapeResult& s) {
  if (!s.strict) return "-";
  const auto& st = *s.strict;
  return fmt::format("{} {:.2e} <= {:.1e}", st.passed ? "ok" : "FAIL", st.rel_l2, st.limit);
}

std::string max_abs_cell(const ShapeResult& s) { return s.strict ? fmt::format("{:.2e}", s.strict->max_abs) : "-"; }

// Geometric means over the timed shapes of each shape's floor, and of max(floor, the empty launch).
struct FloorMeans {
  double floor_ns = 0, with_launch_ns = 0;
};

FloorMeans floor_means(const RunResult& r) {
  const double launch_ns = r.device.empty_call_s * 1e9;
  double log_floor = 0, log_launch = 0;
  int n = 0;
  for (const auto& s : r.shapes) {
    if (!(s.floor_ns > 0) || !(s.stats.mean > 0)) return {};
    log_floor += std::log(s.floor_ns);
    log_launch += std::log(std::max(s.floor_ns, launch_ns));
    ++n;
  }
  if (n == 0) return {};
  return {std::exp(log_floor / n), launch_ns > 0 ? std::exp(log_launch / n) : 0};
}

std::string floor_basis(const DeviceInfo& d) {
  std::string basis = fmt::format("bytes / {:.3g} TB/s", d.bandwidth_bytes_per_s / 1e12);
  if (d.matrix_flops_per_s > 0) basis += fmt::format(", FLOPs / {:.3g} TFLOP/s", d.matrix_flops_per_s / 1e12);
  return basis;
}

}  // namespace

void print_run_table(const RunResult& r, std::FILE* out) {
  fmt::print(out, "\n{} / {}   mode {}   device {} ({})\n", r.problem, r.variant, to_string(r.mode), r.device.name,
             r.device.backend);
  if (r.shapes.empty()) {
    fmt::print(out, "FAILED: {}\n", r.reason);
    return;
  }
  fmt::print(out, "check: {}   timing: {}{}\n", r.check_reference.empty() ? "-" : r.check_reference,
             r.timing.method.empty() ? "-" : r.timing.method,
             r.timing.flush ? fmt::format(" (flush {} MiB)", r.timing.flush_bytes >> 20) : std::string());
  std::size_t w = 28;  // the shape column fits the longest label (moe's are ~50 characters)
  for (const auto& s : r.shapes) w = std::max(w, s.label.size());
  fmt::print(out, "{:>3}  {:<{}} {:<24} {:<22} {:>9} {:>5} {:>11} {:>11} {:>9} {:>6} {:>8}\n", "#", "shape", w,
             "official (mismatch)", "strict (rel L2)", "max abs", "runs", "mean", "best", "GB/s", "%BW", "x floor");
  for (const auto& s : r.shapes) {
    const bool timed = s.stats.runs > 0 && s.stats.mean > 0;
    fmt::print(out, "{:>3}  {:<{}} {:<24} {:<22} {:>9} {:>5} {:>11} {:>11} {:>9} {:>6} {:>8}\n", s.index, s.label,
               w, official_cell(s), strict_cell(s), max_abs_cell(s), s.stats.runs, format_duration_ns(s.stats.mean),
               format_duration_ns(s.stats.best), timed ? fmt::format("{:.4g}", s.gbps) : "-",
               timed && s.pct_bandwidth > 0 ? fmt::format("{:.3g}", s.pct_bandwidth) : "-",
               timed && s.floor_ns > 0 ? fmt::format("{:.2f}", s.stats.mean / s.floor_ns) : "-");
    if (!s.passed()) fmt::print(out, "     FAILED: {}\n", s.reason);
    if (s.repeat_check == "differs")
      fmt::print(out, "     not bit-repeatable: {} of {} elements differ from the warm-up's output (max |diff| {:.2e})\n",
                 s.repeat_differing, s.official ? s.official->total : int64_t{0}, s.repeat_max_abs);
  }
  fmt::print(out, "score (geometric mean of means): {}   {}\n",
             r.score_ns ? format_duration_ns(*r.score_ns) : std::string("-"), r.passed ? "PASSED" : "FAILED");
  const FloorMeans f = floor_means(r);
  if (r.score_ns && f.floor_ns > 0) {
    std::string line = fmt::format("floor (geometric mean of max({})): {} (score = {:.2f}x)", floor_basis(r.device),
                                   format_duration_ns(f.floor_ns), *r.score_ns / f.floor_ns);
    if (f.with_launch_ns > 0)
      line += fmt::format("; with no shape under one empty launch ({}): {} (score = {:.2f}x)",
                          format_duration_ns(r.device.empty_call_s * 1e9), format_duration_ns(f.with_launch_ns),
                          *r.score_ns / f.with_launch_ns);
    fmt::print(out, "{}\n", line);
  }
}

}  // namespace harness::cli
