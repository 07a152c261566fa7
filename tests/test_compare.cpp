#include <cmath>

#include "harness/compare.hpp"
#include "tests/catch.hpp"
#include "tests/leaderboard_fixtures.hpp"

using harness::Entry;
using nlohmann::json;

namespace {

Entry entry(const json& doc) { return harness::entries_from_results(doc).at(0); }

}  // namespace

TEST_CASE("compare: per-shape ratio, z from the standard errors, geometric-mean ratio", "[compare]") {
  // Shape 1: 100 -> 110 us with errors 1 us each: z = 10e3 / sqrt(2e6) = 7.07, significant.
  // Shape 2: 400 -> 401 us with errors 1 us each: z = 0.707, noise.
  const Entry a = entry(lbtest::two_shapes("v1", 100e3, 400e3, 1e3));
  const Entry b = entry(lbtest::two_shapes("v2", 110e3, 401e3, 1e3));
  const auto c = harness::compare_entries(a, b);
  REQUIRE(c.shapes.size() == 2);
  CHECK(lbtest::near(c.shapes[0].ratio, 1.1));
  CHECK(lbtest::near(c.shapes[0].z, 10e3 / std::sqrt(2e6)));
  CHECK(c.shapes[0].significant);
  CHECK(lbtest::near(c.shapes[1].ratio, 401.0 / 400.0));
  CHECK_FALSE(c.shapes[1].significant);
  REQUIRE(c.geomean_ratio);
  CHECK(lbtest::near(*c.geomean_ratio, std::sqrt(1.1 * 401.0 / 400.0)));
  CHECK(c.only_a.empty());
  CHECK(c.only_b.empty());

  // Faster is a negative z, still significant.
  const auto back = harness::compare_entries(b, a);
  CHECK(back.shapes[0].z < -3);
  CHECK(back.shapes[0].significant);
}

TEST_CASE("compare: the z threshold sits at 3 and unequal errors combine in quadrature", "[compare]") {
  // diff 5 us, errors 3 and 4 us -> z = 1.0; diff 16 us -> z = 3.2.
  const Entry a = entry(lbtest::fake_doc("p", "a", {{"s1", 100e3, 3e3}, {"s2", 100e3, 3e3}}));
  const Entry b = entry(lbtest::fake_doc("p", "b", {{"s1", 105e3, 4e3}, {"s2", 116e3, 4e3}}));
  const auto c = harness::compare_entries(a, b);
  REQUIRE(c.shapes.size() == 2);
  CHECK(lbtest::near(c.shapes[0].z, 1.0));
  CHECK_FALSE(c.shapes[0].significant);
  CHECK(lbtest::near(c.shapes[1].z, 3.2));
  CHECK(c.shapes[1].significant);
}

TEST_CASE("compare: shapes timed in one run only are listed, not compared", "[compare]") {
  const Entry a = entry(lbtest::fake_doc("p", "a", {{"s1", 100e3, 1e3}, {"s2", 100e3, 1e3}}));
  const Entry b = entry(lbtest::fake_doc("p", "b", {{"s2", 50e3, 1e3}, {"s3", 100e3, 1e3}}));
  const auto c = harness::compare_entries(a, b);
  REQUIRE(c.shapes.size() == 1);
  CHECK(c.shapes[0].label == "s2");
  CHECK(lbtest::near(*c.geomean_ratio, 0.5));
  CHECK(c.only_a == std::vector<std::string>{"s1"});
  CHECK(c.only_b == std::vector<std::string>{"s3"});
}

TEST_CASE("compare: renders table, markdown and JSON", "[compare]") {
  const Entry a = entry(lbtest::two_shapes("v1", 100e3, 400e3, 1e3));
  const Entry b = entry(lbtest::two_shapes("v2", 200e3, 400e3, 1e3));
  const auto c = harness::compare_entries(a, b, "old", "new");
  const std::string table = harness::render_comparison(c, harness::CompareFormat::table);
  CHECK(table.find("2.000") != std::string::npos);
  CHECK(table.find("slower") != std::string::npos);
  CHECK(table.find("bs=64 kv=8192") != std::string::npos);
  const std::string md = harness::render_comparison(c, harness::CompareFormat::md);
  CHECK(md.find("| ---") != std::string::npos);
  const json j = json::parse(harness::render_comparison(c, harness::CompareFormat::json));
  CHECK(j["a"] == "old");
  CHECK(lbtest::near(j["shapes"][0]["ratio"].get<double>(), 2.0));
  CHECK(j["shapes"][0]["significant"] == true);
  CHECK(lbtest::near(j["geomean_ratio"].get<double>(), std::sqrt(2.0)));
}

TEST_CASE("compare: runs timed by different methods are flagged", "[compare]") {
  const Entry a = entry(lbtest::two_shapes("v1", 100e3, 400e3, 1e3));
  json hot = lbtest::two_shapes("v1", 90e3, 390e3, 1e3);
  hot["runs"][0]["timing"]["method"] = "not official: hot";
  const auto same = harness::compare_entries(a, a);
  CHECK(same.same_timing());
  CHECK(harness::render_comparison(same, harness::CompareFormat::table).find("timed differently") == std::string::npos);
  const auto c = harness::compare_entries(a, entry(hot));
  CHECK_FALSE(c.same_timing());
  const std::string table = harness::render_comparison(c, harness::CompareFormat::table);
  CHECK(table.find("timed differently (A: official; B: not official: hot)") != std::string::npos);
  CHECK(json::parse(harness::render_comparison(c, harness::CompareFormat::json))["same_timing"] == false);
}

TEST_CASE("compare: resolves results files and problem:variant[@commit] references", "[compare]") {
  lbtest::TempDir dir;
  const std::string lb = dir.file("lb.json"), run = dir.file("run.json");
  json old_doc = lbtest::two_shapes("v1", 100e3, 400e3);
  old_doc["build"]["git_commit"] = "aaaa1111";
  json new_doc = lbtest::two_shapes("v1", 50e3, 200e3);
  new_doc["build"]["git_commit"] = "bbbb2222";
  harness::record_result(lb, old_doc);
  harness::record_result(lb, new_doc);
  lbtest::write_text(run, new_doc.dump());

  CHECK(harness::resolve_run("mla_decode:v1", lb, "").commit == "bbbb2222");          // best
  CHECK(harness::resolve_run("mla_decode:v1@aaaa", lb, "").commit == "aaaa1111");     // history
  CHECK(lbtest::near(*harness::resolve_run(run, lb, "").score_ns, 100e3));            // file
  CHECK(lbtest::near(*harness::resolve_run(run + "#mla_decode:v1", lb, "").score_ns, 100e3));
  CHECK_THROWS_AS(harness::resolve_run("mla_decode:v1@cccc", lb, ""), harness::LeaderboardError);
  CHECK_THROWS_AS(harness::resolve_run("mla_decode:nope", lb, ""), harness::LeaderboardError);
  CHECK_THROWS_AS(harness::resolve_run(run + "#other", lb, ""), harness::LeaderboardError);
  CHECK_THROWS_AS(harness::resolve_run(dir.file("missing.json"), lb, ""), harness::LeaderboardError);
  CHECK_THROWS_AS(harness::resolve_run(lb, lb, ""), harness::LeaderboardError);  // a leaderboard is not a run
}
