// Synthetic results documents for the leaderboard / compare / ci / report tests, written through the
// runner's own serialiser (harness/results.hpp) so the tests follow its schema.
#pragma once
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/results.hpp"

namespace lbtest {

struct FakeShape {
  std::string label;
  double mean_ns;
  double err_ns;
  bool passed = true;
};

inline harness::RunResult fake_run(const std::string& problem, const std::string& variant,
                                   const std::vector<FakeShape>& shapes, const std::string& device = "Test GPU") {
  harness::RunResult r;
  r.harness_version = "0.1.0";
  r.date = "2026-12-01T10:00:00Z";
  r.device.name = device;
  r.device.backend = "hip";
  r.device.arch = "gfx950";
  r.device.bandwidth_bytes_per_s = 8e12;
  r.device.bandwidth_source = "test";
  r.problem = problem;
  r.variant = variant;
  r.mode = harness::Mode::benchmark;
  r.timing.flush_bytes = 1u << 30;
  r.timing.method = "official";
  int index = 0;
  for (const auto& f : shapes) {
    harness::ShapeResult s;
    s.index = index++;
    s.label = f.label;
    s.params = {{"bs", 4}};
    s.stats.runs = 100;
    s.stats.mean = f.mean_ns;
    s.stats.err = f.err_ns;
    s.stats.std = f.err_ns * 10;
    s.stats.best = f.mean_ns * 0.95;
    s.stats.worst = f.mean_ns * 1.1;
    s.stats.median = f.mean_ns;
    s.bytes = 8e12 * f.mean_ns * 1e-9 / 2;  // a floor of half the mean
    s.checks = 1;
    harness::OfficialVerdict v;
    v.passed = f.passed;
    v.total = 1000;
    v.mismatches = f.passed ? 0 : 500;
    s.official = v;
    harness::StrictVerdict sv;
    sv.passed = f.passed;
    sv.limit = 0.01;
    s.strict = sv;
    s.status = f.passed ? "ok" : "failed";
    if (!f.passed) s.reason = "500 of 1000 elements mismatch";
    r.shapes.push_back(s);
  }
  r.finalize();
  return r;
}

inline nlohmann::json fake_doc(const std::string& problem, const std::string& variant,
                               const std::vector<FakeShape>& shapes, const std::string& device = "Test GPU") {
  return harness::results_document({fake_run(problem, variant, shapes, device)});
}

// Two shapes with a score of sqrt(a * b).
inline nlohmann::json two_shapes(const std::string& variant, double a_ns, double b_ns, double err_ns = 10,
                                 bool passed = true, const std::string& problem = "mla_decode") {
  return fake_doc(problem, variant, {{"bs=4 kv=1024", a_ns, err_ns, passed}, {"bs=64 kv=8192", b_ns, err_ns, passed}});
}

// A fresh empty directory, removed at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lbtest-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// Relative closeness (Catch2 v2 and v3 spell Approx differently).
inline bool near(double a, double b, double rel = 1e-9) { return std::fabs(a - b) <= rel * std::fabs(b); }

inline void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace lbtest
