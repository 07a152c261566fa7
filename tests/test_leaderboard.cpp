#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "harness/leaderboard.hpp"
#include "tests/catch.hpp"
#include "tests/leaderboard_fixtures.hpp"

using harness::Entry;
using harness::LeaderboardError;
using nlohmann::json;

namespace {

std::size_t count_entries(const json& board) {
  std::size_t n = 0;
  for (const auto& [dev, problems] : board["devices"].items())
    for (const auto& [prob, variants] : problems.items())
      for (const auto& [var, slot] : variants.items()) n += slot["history"].size() + (slot["best"].is_null() ? 0 : 1);
  return n;
}

double best_score(const json& board, const std::string& variant, const std::string& device = "Test GPU") {
  return *harness::best_for(board, device, "mla_decode", variant)->score_ns;
}

}  // namespace

TEST_CASE("leaderboard: make_entry reads the runner's results document", "[leaderboard]") {
  const json doc = lbtest::two_shapes("v1", 100e3, 400e3, 50);
  const auto entries = harness::entries_from_results(doc);
  REQUIRE(entries.size() == 1);
  const Entry& e = entries[0];
  CHECK(e.device == "Test GPU");
  CHECK(e.problem == "mla_decode");
  CHECK(e.variant == "v1");
  CHECK(e.mode == "benchmark");
  CHECK(e.passed);
  REQUIRE(e.score_ns);
  CHECK(lbtest::near(*e.score_ns, 200e3));  // sqrt(100e3 * 400e3)
  REQUIRE(e.shapes.size() == 2);
  CHECK(e.shapes[1].label == "bs=64 kv=8192");
  CHECK(e.shapes[1].err_ns == 50);
  CHECK(e.shapes[1].official_pass);
  // floor = bytes / bandwidth, which the fixture made half the mean
  CHECK(lbtest::near(e.shapes[1].floor_ns, 200e3));
  CHECK(e.flush_bytes == double(1u << 30));

  const Entry failed = harness::entries_from_results(lbtest::two_shapes("v1", 100e3, 400e3, 50, false))[0];
  CHECK_FALSE(failed.passed);
  CHECK_FALSE(failed.reason.empty());
  CHECK_FALSE(harness::eligible_for_best(failed));

  json test_mode = lbtest::two_shapes("v1", 100e3, 400e3);
  test_mode["runs"][0]["mode"] = "test";
  CHECK_FALSE(harness::eligible_for_best(harness::entries_from_results(test_mode)[0]));

  // A benchmark-mode run over the test shapes (--shape-set test) is timed but does not rank; a file
  // from before the field ranks as before, and the field survives the leaderboard's own format.
  json test_shapes = lbtest::two_shapes("v1", 100e3, 400e3);
  test_shapes["runs"][0]["shape_set"] = "test";
  const Entry on_test_shapes = harness::entries_from_results(test_shapes)[0];
  CHECK(on_test_shapes.shape_set == "test");
  CHECK_FALSE(harness::eligible_for_best(on_test_shapes));
  CHECK(harness::entry_from_json(harness::to_json(on_test_shapes)).shape_set == "test");
  json old_file = lbtest::two_shapes("v1", 100e3, 400e3);
  old_file["runs"][0].erase("shape_set");
  CHECK(harness::eligible_for_best(harness::entries_from_results(old_file)[0]));

  // A round trip through the leaderboard's own entry format keeps everything.
  const Entry back = harness::entry_from_json(harness::to_json(e));
  CHECK(harness::to_json(back) == harness::to_json(e));
}

TEST_CASE("leaderboard: record keeps the best passing run and never drops one", "[leaderboard]") {
  lbtest::TempDir dir;
  const std::string path = dir.file("lb.json");

  harness::record_result(path, lbtest::two_shapes("v1", 100e3, 400e3));  // score 200e3
  json board = harness::load_leaderboard(path);
  CHECK(board["schema_version"] == 1);
  CHECK(lbtest::near(best_score(board, "v1"), 200e3));

  harness::record_result(path, lbtest::two_shapes("v1", 50e3, 200e3));  // faster: 100e3
  board = harness::load_leaderboard(path);
  CHECK(lbtest::near(best_score(board, "v1"), 100e3));
  const json& slot = board["devices"]["Test GPU"]["mla_decode"]["v1"];
  REQUIRE(slot["history"].size() == 1);
  CHECK(lbtest::near(slot["history"][0]["score_ns"].get<double>(), 200e3));  // the old best

  harness::record_result(path, lbtest::two_shapes("v1", 80e3, 320e3));  // slower: history only
  harness::record_result(path, lbtest::two_shapes("v1", 1e3, 1e3, 10, false));  // fastest but wrong
  board = harness::load_leaderboard(path);
  CHECK(lbtest::near(best_score(board, "v1"), 100e3));
  CHECK(count_entries(board) == 4);

  const auto all = harness::entries_for(board, "Test GPU", "mla_decode", "v1");
  REQUIRE(all.size() == 4);
  CHECK(all[0].score_ns == harness::best_for(board, "Test GPU", "mla_decode", "v1")->score_ns);
  CHECK_FALSE(all[1].passed);  // newest history entry first
}

TEST_CASE("leaderboard: a run timed another way than the official one never becomes the best", "[leaderboard]") {
  lbtest::TempDir dir;
  const std::string path = dir.file("lb.json");
  harness::record_result(path, lbtest::two_shapes("v1", 100e3, 400e3));  // official: score 200e3
  for (const char* method : {"not official: hot", "not official: clean flush", "not official: graph"}) {
    json fast = lbtest::two_shapes("v1", 10e3, 40e3);
    fast["runs"][0]["timing"]["method"] = method;
    harness::record_result(path, fast);
  }
  const json board = harness::load_leaderboard(path);
  CHECK(lbtest::near(best_score(board, "v1"), 200e3));
  const auto all = harness::entries_for(board, "Test GPU", "mla_decode", "v1");
  REQUIRE(all.size() == 4);  // recorded, as history
  CHECK(all[1].timing == "not official: graph");
  json official = lbtest::two_shapes("v1", 50e3, 200e3);
  official["runs"][0]["timing"]["method"] = "official";
  harness::record_result(path, official);
  CHECK(lbtest::near(best_score(harness::load_leaderboard(path), "v1"), 100e3));
}

TEST_CASE("leaderboard: a failing run alone has no best", "[leaderboard]") {
  lbtest::TempDir dir;
  const std::string path = dir.file("lb.json");
  harness::record_result(path, lbtest::two_shapes("bad", 1e3, 1e3, 10, false));
  const json board = harness::load_leaderboard(path);
  CHECK_FALSE(harness::best_for(board, "Test GPU", "mla_decode", "bad"));
  CHECK(harness::entries_for(board, "Test GPU", "mla_decode", "bad").size() == 1);
  CHECK(harness::render_leaderboard(board, {}).find("no passing run") != std::string::npos);
}

TEST_CASE("leaderboard: malformed file or unknown schema is refused and left untouched", "[leaderboard]") {
  lbtest::TempDir dir;
  const std::string path = dir.file("lb.json");
  const std::string broken[] = {
      "{\"schema_version\": 1, \"devices\": {",                                 // truncated
      "{\"schema_version\": 2, \"devices\": {}}",                               // unknown version
      "[1, 2, 3]",                                                              // not a leaderboard
      "{\"schema_version\": 1, \"devices\": {\"d\": {\"p\": {\"v\": {\"best\": null}}}}}",  // no history
      "{\"schema_version\": 1, \"devices\": {\"d\": {\"p\": {\"v\": {\"best\": {\"device\": 3}, \"history\": []}}}}}",
  };
  for (const auto& text : broken) {
    lbtest::write_text(path, text);
    CHECK_THROWS_AS(harness::record_result(path, lbtest::two_shapes("v1", 100e3, 400e3)), LeaderboardError);
    CHECK(harness::read_text_file(path) == text);
  }
  // The message is one line and names the file.
  lbtest::write_text(path, broken[1]);
  try {
    harness::load_leaderboard(path);
    FAIL("no error");
  } catch (const LeaderboardError& ex) {
    const std::string msg = ex.what();
    CHECK(msg.find(path) != std::string::npos);
    CHECK(msg.find("schema_version") != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("leaderboard: concurrent writers lose nothing (processes and threads)", "[leaderboard]") {
  lbtest::TempDir dir;
  const std::string path = dir.file("lb.json");
  constexpr int kProcs = 4, kThreads = 3, kEach = 8;

  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int rc = 0;
      try {
        for (int i = 0; i < kEach; ++i)
          harness::record_result(path, lbtest::two_shapes("p" + std::to_string(p), 100e3 + i, 200e3 + i));
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  std::vector<std::thread> threads;
  std::atomic<int> thread_failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < kEach; ++i)
          harness::record_result(path, lbtest::two_shapes("t" + std::to_string(t), 100e3 - i, 200e3));
      } catch (...) {
        ++thread_failures;
      }
    });
  for (auto& th : threads) th.join();
  for (pid_t pid : kids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(thread_failures == 0);
  const json board = harness::load_leaderboard(path);  // parses: never torn
  CHECK(count_entries(board) == std::size_t(kProcs + kThreads) * kEach);
  // The threads' runs got faster each time: the last one is best.
  CHECK(lbtest::near(best_score(board, "t0"), std::sqrt((100e3 - (kEach - 1)) * 200e3)));
}

TEST_CASE("leaderboard: merge of files keeps every entry once and lets bests compete", "[leaderboard]") {
  lbtest::TempDir dir;
  const std::string a = dir.file("a.json"), b = dir.file("b.json");
  harness::record_result(a, lbtest::two_shapes("v1", 100e3, 400e3));                  // 200e3
  harness::record_result(a, lbtest::two_shapes("v2", 10e3, 10e3));
  harness::record_result(b, lbtest::two_shapes("v1", 50e3, 200e3));                   // 100e3: wins
  harness::record_result(b, lbtest::fake_doc("mla_decode", "v1", {{"bs=4 kv=1024", 7e3, 1}}, "Other GPU"));

  json merged = harness::empty_leaderboard();
  harness::merge_board(merged, harness::load_leaderboard(a));
  harness::merge_board(merged, harness::load_leaderboard(b));
  harness::merge_board(merged, harness::load_leaderboard(a));  // again: duplicates are skipped
  CHECK(count_entries(merged) == 4);
  CHECK(lbtest::near(best_score(merged, "v1"), 100e3));
  CHECK(lbtest::near(best_score(merged, "v2"), 10e3));
  CHECK(lbtest::near(best_score(merged, "v1", "Other GPU"), 7e3));
  // The merged board is itself a valid file.
  CHECK_NOTHROW(harness::parse_leaderboard(merged.dump(), "merged"));
}

TEST_CASE("leaderboard: rendering ranks by score and filters", "[leaderboard]") {
  json board = harness::empty_leaderboard();
  harness::merge_entry(board, harness::entries_from_results(lbtest::two_shapes("slow", 300e3, 300e3))[0]);
  harness::merge_entry(board, harness::entries_from_results(lbtest::two_shapes("fast", 100e3, 100e3))[0]);
  harness::merge_entry(board,
                       harness::entries_from_results(lbtest::two_shapes("x", 1e3, 1e3, 1, true, "moe_mxfp4"))[0]);
  const std::string all = harness::render_leaderboard(board, {});
  const auto fast = all.find("fast"), slow = all.find("slow");
  REQUIRE(fast != std::string::npos);
  REQUIRE(slow != std::string::npos);
  CHECK(fast < slow);
  CHECK(all.find("50%") != std::string::npos);  // fraction of floor: the fixture's floor is half the mean
  CHECK(all.find("moe_mxfp4") != std::string::npos);
  const std::string only = harness::render_leaderboard(board, {"mla_decode", ""});
  CHECK(only.find("moe_mxfp4") == std::string::npos);
  CHECK(harness::render_leaderboard(board, {"", "No Such GPU"}) == "(no entries)\n");
}

TEST_CASE("leaderboard: a best is only replaced by a run over at least the same shapes", "[leaderboard]") {
  lbtest::TempDir dir;
  const std::string path = dir.file("lb.json");
  harness::record_result(path, lbtest::two_shapes("v1", 100e3, 400e3));  // 2 shapes, score 200e3
  // Faster, but over one of the two shapes only (e.g. a leaderboard-mode run of shape 0): history.
  harness::record_result(path, lbtest::fake_doc("mla_decode", "v1", {{"bs=4 kv=1024", 90e3, 50, true}}));
  json board = harness::load_leaderboard(path);
  CHECK(lbtest::near(best_score(board, "v1"), 200e3));
  CHECK(board["devices"]["Test GPU"]["mla_decode"]["v1"]["history"].size() == 1);
  // Over three shapes (a superset): replaces the best although its geometric mean is higher.
  harness::record_result(path, lbtest::fake_doc("mla_decode", "v1", {{"bs=4 kv=1024", 100e3, 50, true},
                                                                     {"bs=64 kv=8192", 400e3, 50, true},
                                                                     {"bs=256 kv=8192", 1600e3, 50, true}}));
  board = harness::load_leaderboard(path);
  CHECK(lbtest::near(best_score(board, "v1"), 400e3));
  // Same three shapes, slower: history; faster: best.
  harness::record_result(path, lbtest::fake_doc("mla_decode", "v1", {{"bs=4 kv=1024", 110e3, 50, true},
                                                                     {"bs=64 kv=8192", 400e3, 50, true},
                                                                     {"bs=256 kv=8192", 1600e3, 50, true}}));
  board = harness::load_leaderboard(path);
  CHECK(lbtest::near(best_score(board, "v1"), 400e3));
  CHECK(count_entries(board) == 4);
}

TEST_CASE("leaderboard: short_commit keeps a dirty build's mark", "[leaderboard]") {
  using harness::short_commit;
  CHECK(short_commit("61bb500ff74a") == "61bb500ff7");
  CHECK(short_commit("61bb500ff74a-dirty") == "61bb500ff7-dirty");
  CHECK(short_commit("61bb500ff74a-dirty", 12) == "61bb500ff74a-dirty");
  CHECK(short_commit("abc") == "abc");
  CHECK(short_commit("-dirty") == "-dirty");
  CHECK(short_commit("") == "");
}
