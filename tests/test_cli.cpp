// The built binary (HARNESS_BINARY): usage errors are one line with exit code 2; runs write
// results that match docs/results.schema.json; a worker that overruns --timeout is reported.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/atomic_file.hpp"
#include "harness/build_info.hpp"
#include "harness/variant_registry.hpp"
#include "tests/catch.hpp"
#include "tests/env_override.hpp"

std::vector<std::string> schema_errors(const nlohmann::json& doc);  // test_results.cpp

namespace {

struct Ran {
  int code = -1;
  std::string output;  // stdout + stderr
};

Ran harness_cmd(const std::string& args) {
  Ran r;
  const std::string cmd = std::string(HARNESS_BINARY) + " " + args + " 2>&1";
  FILE* f = ::popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void check_usage_error(const std::string& args, const std::string& must_contain) {
  INFO("harness " << args);
  const Ran r = harness_cmd(args);
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.rfind("harness: error: ", 0) == 0);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find(must_contain) != std::string::npos);
}

std::string temp_json(const char* tag) {
  return (std::filesystem::temp_directory_path() / (std::string("harness-cli-") + tag + "-" + std::to_string(::getpid()) + ".json")).string();
}

}  // namespace

TEST_CASE("cli: usage errors are one line naming the valid choices, exit code 2") {
  check_usage_error("", "A subcommand is required (commands: ");
  check_usage_error("", " list, ");
  check_usage_error("frobnicate", "unknown command 'frobnicate' (commands: ");
  check_usage_error("frobnicate", " run");
  check_usage_error("run nope --variant cpu", "unknown problem 'nope' (valid: ");
  check_usage_error("run nope --variant cpu", "mla_decode");
  check_usage_error("run mla_decode --variant zzz", "unknown variant 'zzz' for mla_decode (valid: ");
  check_usage_error("run mla_decode --variant cpu --shapes 4", "bad shape index '4' for mla_decode test shapes (valid: all or indices 0-3)");
  check_usage_error("run mla_decode --variant cpu --mode profile --graph", "--hot / --graph / --clean-flush: profile mode times nothing");
  check_usage_error("run mla_decode --variant cpu --hot --clean-flush", "--clean-flush: not with --hot (there is no flush to clean)");
  for (const char* name : {"HARNESS_MATRIX_TFLOPS", "HARNESS_MATRIX8_TFLOPS"}) {
    EnvOverride bad(name, "fast");
    check_usage_error("run mla_decode --variant cpu", std::string(name) + " must be a positive number, got 'fast'");
  }
  check_usage_error("run mla_decode --variant cpu --shapes 1,x", "bad shape index 'x'");
  check_usage_error("run mla_decode --variant cpu --mode benchmark --shapes 8", "indices 0-7");
  check_usage_error("run mla_decode --variant cpu --mode benchmark --shape-set tests",
                    "--shape-set: unknown shape set 'tests' (valid: test, benchmark, custom)");
  check_usage_error("run mla_decode --variant cpu --mode benchmark --shape-set test --shapes 4",
                    "bad shape index '4' for mla_decode test shapes (valid: all or indices 0-3)");
  check_usage_error("run mla_decode --variant cpu --mode benchmark --shape-set test --record",
                    "--record: a benchmark-mode run over the test shapes does not rank");
  check_usage_error("run mla_decode --variant cpu --shape 'bs=2 kx=5'", "unknown parameter 'kx' (names: bs, kv, seed)");
  check_usage_error("run mla_decode --variant cpu --shape 'bs=two'", "bs must be a whole number >= 0, got 'two'");
  check_usage_error("run mla_decode --variant cpu --shape 'bs=2 kv=0'", "--shape 'bs=2 kv=0': bs and kv must be at least 1");
  check_usage_error("run mla_decode --variant cpu --shape ''", "give name=value pairs");
  check_usage_error("run mla_decode --variant cpu --shape bs=2 --shape-set test", "drop --shape-set test");
  check_usage_error("run mla_decode --variant cpu --shape-set custom", "give the shapes with --shape");
  check_usage_error("run mla_decode --variant cpu --mode benchmark --shape bs=2 --record",
                    "run over the custom shapes does not rank");
  check_usage_error("run moe_mxfp4 --variant cpu --shape d_expert=300", "multiples of 256");
  check_usage_error("run mla_decode --variant cpu --mode fast", "unknown mode 'fast' (valid: test, benchmark, leaderboard, profile)");
  check_usage_error("run mla_decode --variant cpu --bogus", "--bogus");
  check_usage_error("run mla_decode", "--variant");
  check_usage_error("run mla_decode --variant cpu --seed minus", "--seed");
  check_usage_error("run mla_decode --variant cpu --json /nonexistent-dir/r.json", "does not exist");
  check_usage_error("run mla_decode --variant cpu --mode benchmark --fresh 2", "--fresh: test mode only");
  check_usage_error("run mla_decode --variant cpu --fresh -1", "--fresh: a count of fresh inputs");
}

TEST_CASE("cli: a GPU variant on a cpu build is a usage error") {
  const auto& b = harness::build_info();
  if (b.backend != "cpu") return;
  const auto pos = b.all_gpu_variants.find("mla_decode:");
  if (pos == std::string::npos) return;  // no GPU variant in the tree yet
  const auto end = b.all_gpu_variants.find(',', pos);
  const std::string name = b.all_gpu_variants.substr(pos + 11, end == std::string::npos ? std::string::npos : end - pos - 11);
  check_usage_error("run mla_decode --variant " + name, "is a GPU variant, not compiled into this cpu build");
}

TEST_CASE("cli: --variant gpu / all select this build's variants") {
  const Ran all = harness_cmd("run mla_decode --variant all --shapes 0 --mode bogus");
  CHECK(all.output.find("unknown mode 'bogus'") != std::string::npos);  // the group itself was accepted
  if (harness::build_info().backend == "cpu")
    check_usage_error("run mla_decode --variant gpu", "--variant gpu: no such variants of mla_decode in this cpu build");
}

TEST_CASE("cli: export --variant gpu writes every GPU variant into a directory") {
  const auto dir = std::filesystem::temp_directory_path() / ("harness-export-all-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Ran r = harness_cmd("export moe_mxfp4 --variant gpu -o " + dir.string());
  INFO(r.output);
  CHECK(r.code == 0);
  std::size_t expected = 0;
  for (const auto& entry : harness::split_list(harness::build_info().all_gpu_variants)) {
    if (entry.rfind("moe_mxfp4:", 0) != 0) continue;
    ++expected;
    CHECK(std::filesystem::is_regular_file(dir / ("moe_mxfp4__" + entry.substr(10) + ".py")));
  }
  CHECK(expected > 0);
  CHECK(static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), {})) == expected);
  std::filesystem::remove_all(dir);
  const std::string file = temp_json("export-not-dir");
  harness::write_file_atomic(file, "x");
  check_usage_error("export moe_mxfp4 --variant gpu -o " + file, "must be a directory");
  std::filesystem::remove(file);
}

TEST_CASE("cli: list shows problems, variants and shapes") {
  const Ran r = harness_cmd("list");
  CHECK(r.code == 0);
  CHECK(r.output.find("mla_decode") != std::string::npos);
  CHECK(r.output.find("moe_mxfp4") != std::string::npos);
  CHECK(r.output.find("seed 4220") != std::string::npos);
  CHECK(r.output.find("cpu ") != std::string::npos);
  // Variants in number order (v2 before v10), compiled or not: v2 and v11 of mla_decode exist in every build's list.
  const auto mla = r.output.find("mla_decode:"), moe = r.output.find("moe_mxfp4:");
  REQUIRE(mla < moe);
  const auto v2 = r.output.find("\n    v2 ", mla), v11 = r.output.find("\n    v11 ", mla);
  REQUIRE(v2 < moe);
  REQUIRE(v11 < moe);
  CHECK(v2 < v11);
  CHECK(r.output.find("\n    cpu ", mla) < v2);
}

TEST_CASE("cli: an isolated cpu run writes a results file that matches the schema") {
  const std::string path = temp_json("run");
  const Ran r = harness_cmd("run mla_decode --variant cpu --shapes 0 --json " + path);
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("PASSED") != std::string::npos);
  const auto doc = nlohmann::json::parse(harness::read_file(path));
  const auto errors = schema_errors(doc);
  for (const auto& e : errors) INFO(e);
  CHECK(errors.empty());
  REQUIRE(doc["runs"].size() == 1);
  const auto& run = doc["runs"][0];
  CHECK(run["passed"] == true);
  CHECK(run["check_reference"] == "float64 oracle");
  REQUIRE(run["shapes"].size() == 1);
  CHECK(run["shapes"][0]["seed"] == 4220);
  CHECK(run["shapes"][0]["official"]["total"] == 4 * 16 * 512);
  CHECK(run["shapes"][0]["strict"]["rel_l2"].get<double>() > 0);
  std::filesystem::remove(path);
}

TEST_CASE("cli: --shape runs a shape of one's own in the worker, with its seed") {
  const std::string path = temp_json("custom");
  const Ran r = harness_cmd("run mla_decode --variant cpu --shape 'bs=1 kv=64 seed=9' --shape bs=2,kv=32 --json " + path);
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("custom/bs=1 kv=64") != std::string::npos);
  const auto doc = nlohmann::json::parse(harness::read_file(path));
  CHECK(schema_errors(doc).empty());
  const auto& run = doc["runs"][0];
  CHECK(run["shape_set"] == "custom");
  REQUIRE(run["shapes"].size() == 2);
  CHECK(run["shapes"][0]["seed"] == 9);
  CHECK(run["shapes"][0]["official"]["total"] == 1 * 16 * 512);
  CHECK(run["shapes"][1]["label"] == "custom/bs=2 kv=32");
  CHECK(run["shapes"][1]["seed"] == 4220);  // unnamed: the mode's first shape's
  std::filesystem::remove(path);
}

TEST_CASE("cli: --fresh checks more calls a shape on fresh inputs, in the worker") {
  const std::string path = temp_json("fresh");
  const Ran r = harness_cmd("run mla_decode --variant cpu --shapes 0 --fresh 2 --json " + path);
  INFO(r.output);
  CHECK(r.code == 0);
  const auto doc = nlohmann::json::parse(harness::read_file(path));
  CHECK(schema_errors(doc).empty());
  REQUIRE(doc["runs"][0]["shapes"].size() == 1);
  CHECK(doc["runs"][0]["shapes"][0]["checks"] == 3);  // the shape's own input and two fresh ones
  CHECK(doc["runs"][0]["shapes"][0]["seed"] == 4220);  // the shape's own (recorded), not a fresh one
  std::filesystem::remove(path);
}

TEST_CASE("cli: a worker past --timeout is killed, recorded, and the next variant still runs") {
  const std::string path = temp_json("timeout");
  const Ran r = harness_cmd("run mla_decode --variant cpu,cpu --shapes 3 --timeout 1 --json " + path);
  INFO(r.output);
  CHECK(r.code == 1);
  const auto doc = nlohmann::json::parse(harness::read_file(path));
  CHECK(schema_errors(doc).empty());
  REQUIRE(doc["runs"].size() == 2);
  for (const auto& run : doc["runs"]) {
    CHECK(run["status"] == "failed");
    CHECK(run["reason"] == "timed out after 1 s");
  }
  CHECK(doc["passed"] == false);
  std::filesystem::remove(path);
}
