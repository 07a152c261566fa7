#include <sys/wait.h>

#include <cstdlib>
#include <sstream>

#include "harness/ci.hpp"
#include "tests/catch.hpp"
#include "tests/leaderboard_fixtures.hpp"

using harness::CiStatus;
using nlohmann::json;

namespace {

// Baseline: v1 at 100 / 400 us with 1 us errors.
json baseline_board() {
  json board = harness::empty_leaderboard();
  harness::merge_entry(board, harness::entries_from_results(lbtest::two_shapes("v1", 100e3, 400e3, 1e3))[0]);
  return board;
}

harness::CiOutcome judge(const json& doc, const std::string& variant = "v1", double max_slowdown = 0.05) {
  harness::CiRun run;
  run.results = doc;
  return harness::evaluate_run({"mla_decode", variant}, run, baseline_board(), max_slowdown);
}

}  // namespace

TEST_CASE("ci: --shard and --max-slowdown parsing", "[ci]") {
  CHECK(harness::parse_shard("1/1") == std::pair<int, int>{1, 1});
  CHECK(harness::parse_shard("3/4") == std::pair<int, int>{3, 4});
  for (const char* bad : {"0/2", "3/2", "1", "a/b", "1/0", "1/2x", ""})
    CHECK_THROWS_AS(harness::parse_shard(bad), std::invalid_argument);
  CHECK(harness::parse_fraction("5%") == 0.05);
  CHECK(harness::parse_fraction("0.1") == 0.1);
  for (const char* bad : {"x", "5%%", "-1", "", "nan"})
    CHECK_THROWS_AS(harness::parse_fraction(bad), std::invalid_argument);
}

TEST_CASE("ci: a slowdown beyond the threshold and the noise fails with 4", "[ci]") {
  const auto slow = judge(lbtest::two_shapes("v1", 120e3, 400e3, 1e3));  // +20%, z = 14
  CHECK(slow.status == CiStatus::slower);
  CHECK(slow.message.find("bs=4 kv=1024") != std::string::npos);
  CHECK(harness::ci_exit_code({slow}) == harness::kCiSlower);

  // +20% but the errors are huge: noise, not a regression.
  const auto noisy = judge(lbtest::two_shapes("v1", 120e3, 400e3, 20e3));
  CHECK(noisy.status == CiStatus::ok);
  // +4%, significant (z = 4e3 / sqrt(1e3^2 + 100^2) = 3.98), but under the 5% threshold.
  const auto small = judge(lbtest::two_shapes("v1", 104e3, 400e3, 100));
  CHECK(small.status == CiStatus::ok);
  // The same +4% with a 2% threshold is a regression.
  CHECK(judge(lbtest::two_shapes("v1", 104e3, 400e3, 100), "v1", 0.02).status == CiStatus::slower);
  // +3%: z = 2.99 is noise even with a 2% threshold.
  CHECK(judge(lbtest::two_shapes("v1", 103e3, 400e3, 100), "v1", 0.02).status == CiStatus::ok);
  // Faster is fine.
  const auto fast = judge(lbtest::two_shapes("v1", 80e3, 400e3, 1e3));
  CHECK(fast.status == CiStatus::faster);
  CHECK(harness::ci_exit_code({fast, noisy, small}) == harness::kCiOk);
}

TEST_CASE("ci: a failed check or a crash fails with 3, before a slowdown", "[ci]") {
  const auto wrong = judge(lbtest::two_shapes("v1", 100e3, 400e3, 1e3, false));
  CHECK(wrong.status == CiStatus::failed);
  CHECK_FALSE(wrong.message.empty());
  harness::CiRun crashed;
  crashed.error = "crashed: SIGSEGV";
  const auto crash = harness::evaluate_run({"mla_decode", "v1"}, crashed, baseline_board(), 0.05);
  CHECK(crash.status == CiStatus::crashed);
  const auto slow = judge(lbtest::two_shapes("v1", 200e3, 400e3, 1e3));
  CHECK(harness::ci_exit_code({slow, wrong}) == harness::kCiFailed);
  CHECK(harness::ci_exit_code({crash, slow}) == harness::kCiFailed);
  // `harness run` refusing its arguments is a usage error of the whole gate, before everything else.
  harness::CiRun refused;
  refused.error = "harness run exited with 2";
  refused.usage_error = true;
  const auto usage = harness::evaluate_run({"mla_decode", "v1"}, refused, baseline_board(), 0.05);
  CHECK(usage.status == CiStatus::usage);
  CHECK(harness::ci_exit_code({wrong, usage, slow}) == harness::kCiUsage);
  // Results that hold another variant's run count as a crash of this job.
  CHECK(judge(lbtest::two_shapes("v2", 100e3, 400e3)).status == CiStatus::crashed);
}

TEST_CASE("ci: --require-repeatable fails a run whose outputs differ bit for bit", "[ci]") {
  json doc = lbtest::two_shapes("v1", 100e3, 400e3, 1e3);
  for (auto& s : doc["runs"][0]["shapes"]) s["repeat_check"] = "identical";
  harness::CiRun run;
  run.results = doc;
  CHECK(harness::evaluate_run({"mla_decode", "v1"}, run, baseline_board(), 0.05, true).status == CiStatus::ok);
  doc["runs"][0]["shapes"][1]["repeat_check"] = "differs";
  doc["runs"][0]["shapes"][1]["repeat_differing"] = 3;
  run.results = doc;
  // Reported only unless asked for: the official runner does not look.
  CHECK(harness::evaluate_run({"mla_decode", "v1"}, run, baseline_board(), 0.05).status == CiStatus::ok);
  const auto strict = harness::evaluate_run({"mla_decode", "v1"}, run, baseline_board(), 0.05, true);
  CHECK(strict.status == CiStatus::failed);
  CHECK(strict.message.find("not bit-repeatable: ") == 0);
  CHECK(strict.message.find("(3 elements differ)") != std::string::npos);
  CHECK(harness::ci_exit_code({strict}) == harness::kCiFailed);
}

TEST_CASE("ci: a variant without a baseline entry is new, not a failure", "[ci]") {
  const auto fresh = judge(lbtest::two_shapes("v9", 100e3, 400e3), "v9");
  CHECK(fresh.status == CiStatus::new_entry);
  // Another device's best is not a baseline either.
  const auto other = judge(lbtest::fake_doc("mla_decode", "v1", {{"bs=4 kv=1024", 900e3, 1}}, "Other GPU"));
  CHECK(other.status == CiStatus::new_entry);
  CHECK(harness::ci_exit_code({fresh, other}) == harness::kCiOk);
}

TEST_CASE("ci: the whole command on results files: exit codes, shards, summary", "[ci]") {
  lbtest::TempDir dir;
  const std::string lb = dir.file("lb.json");
  harness::save_leaderboard(lb, baseline_board());
  const std::string ok = dir.file("ok.json"), slow = dir.file("slow.json"), wrong = dir.file("wrong.json");
  lbtest::write_text(ok, lbtest::two_shapes("v1", 100e3, 400e3, 1e3).dump());
  lbtest::write_text(slow, lbtest::two_shapes("v1", 150e3, 400e3, 1e3).dump());
  lbtest::write_text(wrong, lbtest::two_shapes("v1", 100e3, 400e3, 1e3, false).dump());

  harness::CiOptions o;
  o.baseline = lb;
  o.summary_path = dir.file("summary.md");
  std::ostringstream log;
  auto run = [&](std::vector<std::string> files) {
    o.results_files = std::move(files);
    return harness::run_ci(o, {}, log);
  };
  CHECK(run({ok}) == harness::kCiOk);
  CHECK(run({ok, slow}) == harness::kCiSlower);
  CHECK(run({slow, wrong}) == harness::kCiFailed);
  CHECK(run({dir.file("missing.json")}) == harness::kCiFailed);
  o.shard_count = 2;
  o.shard_index = 1;
  CHECK(run({ok, slow}) == harness::kCiOk);  // shard 1/2 takes the first job only
  o.shard_index = 2;
  CHECK(run({ok, slow}) == harness::kCiSlower);

  const std::string summary = harness::read_text_file(o.summary_path);
  CHECK(summary.find("## harness ci") != std::string::npos);
  CHECK(summary.find("SLOWER") != std::string::npos);
  CHECK(summary.find("### mla_decode:v1") != std::string::npos);  // the slow job's per-shape table
  CHECK(summary.find("FAILED") != std::string::npos);

  // A malformed baseline is the caller's usage error (exit 2), not a job failure.
  lbtest::write_text(lb, "{oops");
  CHECK_THROWS_AS(run({ok}), harness::LeaderboardError);
}

TEST_CASE("ci: jobs go through the executor, one call per selected job", "[ci]") {
  lbtest::TempDir dir;
  harness::CiOptions o;
  o.baseline = dir.file("none.json");  // missing: every job is new
  std::vector<std::string> ran;
  const harness::CiExecutor exec = [&](const harness::CiJob& job) {
    ran.push_back(job.problem + ":" + job.variant);
    harness::CiRun r;
    r.results = lbtest::two_shapes(job.variant, 100e3, 400e3, 1e3, true, job.problem);
    return r;
  };
  std::ostringstream log;
  const auto jobs = harness::select_jobs(o);
  CHECK(harness::run_ci(o, exec, log) == harness::kCiOk);
  CHECK(ran.size() == jobs.size());
  // Sharding partitions the job list.
  o.shard_count = 2;
  std::size_t total = 0;
  for (int i = 1; i <= 2; ++i) {
    o.shard_index = i;
    total += harness::select_jobs(o).size();
  }
  CHECK(total == jobs.size());
  // A variant filter that names nothing registered runs nothing.
  o.shard_count = 1;
  o.shard_index = 1;
  o.variants = {"no_such_variant"};
  CHECK(harness::select_jobs(o).empty());
}

TEST_CASE("ci: a test-mode run is judged on correctness only", "[ci]") {
  json doc = lbtest::two_shapes("v1", 500e3, 900e3, 0);
  doc["runs"][0]["mode"] = "test";
  const auto c = judge(doc);
  CHECK(c.status == CiStatus::ok);
  CHECK_FALSE(c.comparison);
  doc["runs"][0]["shapes"][0]["official"]["passed"] = false;
  doc["runs"][0]["shapes"][0]["status"] = "failed";
  doc["runs"][0]["passed"] = false;
  CHECK(judge(doc).status == CiStatus::failed);
}

#ifdef HARNESS_BINARY
namespace {
int run_harness(const std::string& args) {
  const int status = std::system((std::string(HARNESS_BINARY) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

TEST_CASE("ci: the harness binary's exit codes (synthetic results)", "[ci][cli]") {
  lbtest::TempDir dir;
  const std::string lb = dir.file("lb.json");
  harness::save_leaderboard(lb, baseline_board());
  lbtest::write_text(dir.file("ok.json"), lbtest::two_shapes("v1", 100e3, 400e3, 1e3).dump());
  lbtest::write_text(dir.file("slow.json"), lbtest::two_shapes("v1", 150e3, 400e3, 1e3).dump());
  lbtest::write_text(dir.file("wrong.json"), lbtest::two_shapes("v1", 100e3, 400e3, 1e3, false).dump());
  const std::string base = "ci --baseline " + lb + " --summary " + dir.file("s.md") + " --results ";
  CHECK(run_harness(base + dir.file("ok.json")) == 0);
  CHECK(run_harness(base + dir.file("slow.json")) == 4);
  CHECK(run_harness(base + dir.file("wrong.json")) == 3);
  CHECK(run_harness(base + dir.file("slow.json") + " --max-slowdown 60%") == 0);
  json jitter = lbtest::two_shapes("v1", 100e3, 400e3, 1e3);
  jitter["runs"][0]["shapes"][0]["repeat_check"] = "differs";
  lbtest::write_text(dir.file("jitter.json"), jitter.dump());
  CHECK(run_harness(base + dir.file("jitter.json")) == 0);
  CHECK(run_harness(base + dir.file("jitter.json") + " --require-repeatable") == 3);
  CHECK(run_harness(base + dir.file("ok.json") + " --shard 3/2") == 2);
  CHECK(run_harness(base + dir.file("ok.json") + " --max-slowdown fast") == 2);
  CHECK(run_harness("ci --results " + dir.file("ok.json")) == 2);  // no --baseline
  lbtest::write_text(lb, "{\"schema_version\": 7, \"devices\": {}}");
  CHECK(run_harness(base + dir.file("ok.json")) == 2);
}

TEST_CASE("leaderboard: the harness binary records, merges, refuses a broken file", "[leaderboard][cli]") {
  lbtest::TempDir dir;
  const std::string lb = dir.file("lb.json"), r1 = dir.file("r1.json"), r2 = dir.file("r2.json");
  lbtest::write_text(r1, lbtest::two_shapes("v1", 100e3, 400e3).dump());
  lbtest::write_text(r2, lbtest::two_shapes("v2", 50e3, 400e3).dump());
  CHECK(run_harness("leaderboard record " + r1 + " --file " + lb) == 0);
  CHECK(run_harness("leaderboard record " + r2 + " --file " + dir.file("other.json")) == 0);
  CHECK(run_harness("leaderboard merge " + lb + " " + dir.file("other.json") + " -o " + dir.file("m.json")) == 0);
  const json merged = harness::load_leaderboard(dir.file("m.json"));
  CHECK(harness::best_for(merged, "Test GPU", "mla_decode", "v1"));
  CHECK(harness::best_for(merged, "Test GPU", "mla_decode", "v2"));
  CHECK(run_harness("leaderboard --file " + lb) == 0);
  CHECK(run_harness("compare mla_decode:v1 " + r2 + " --file " + lb + " --format json") == 0);
  CHECK(run_harness("compare mla_decode:nope " + r2 + " --file " + lb) == 2);
  CHECK(run_harness("report -o " + dir.file("r.html") + " --leaderboard " + lb + " " + r2) == 0);
  CHECK(harness::read_text_file(dir.file("r.html")).find("<svg") != std::string::npos);

  const std::string broken = "{\"schema_version\": 1, \"devices\": [";
  lbtest::write_text(lb, broken);
  CHECK(run_harness("leaderboard record " + r2 + " --file " + lb) == 2);
  CHECK(run_harness("leaderboard --file " + lb) == 2);
  CHECK(harness::read_text_file(lb) == broken);
}
#endif
