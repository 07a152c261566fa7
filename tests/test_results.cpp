// Runner pipeline on a tiny fake problem (not registered), the results JSON against
// docs/results.schema.json, and atomic file writes.
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "harness/atomic_file.hpp"
#include "harness/cli_table.hpp"
#include "harness/results.hpp"
#include "harness/runner.hpp"
#include "tests/catch.hpp"
#include "tests/env_override.hpp"

using namespace harness;
using nlohmann::json;

namespace {

struct FakeCfg { int64_t n; };
struct FakeArgs {
  FakeCfg cfg;
  const float* x;
  uint16_t* out;
  void* ws;
  size_t ws_bytes;
};

uint16_t to_bf16(float f) {  // round to nearest even (finite inputs only here)
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b += 0x7FFF + ((b >> 16) & 1);
  return static_cast<uint16_t>(b >> 16);
}

// out = 2x + 1 in bf16.
void good(const FakeArgs& a) {
  for (int64_t i = 0; i < a.cfg.n; ++i) a.out[i] = to_bf16(2 * a.x[i] + 1);
}

int g_calls = 0;
float g_cached[4096];

struct FakeVariant {
  const char* name;
  std::function<void(const FakeArgs&)> fn;
};

std::vector<FakeVariant>& fakes() {
  static std::vector<FakeVariant> v = {
      {"good", good},
      {"nan", [](const FakeArgs&) {}},  // leaves the poisoned output
      {"mutate", [](const FakeArgs& a) { good(a); const_cast<float*>(a.x)[1] += 1; }},
      {"overrun", [](const FakeArgs& a) { good(a); a.out[a.cfg.n] = 0; }},
      {"ws_overrun", [](const FakeArgs& a) { good(a); static_cast<char*>(a.ws)[a.ws_bytes + 5] = 1; }},
      {"biased", [](const FakeArgs& a) {  // inside the official tolerance, outside the strict limit
         for (int64_t i = 0; i < a.cfg.n; ++i) a.out[i] = to_bf16((2 * a.x[i] + 1) * 1.009f);
       }},
      {"flaky", [](const FakeArgs& a) { if (g_calls++ == 0) good(a); else std::memset(a.out, 0, a.cfg.n * 2); }},
      {"cache", [](const FakeArgs& a) {  // replays its first output of each size
         static int64_t cached_n = 0;
         if (g_calls++ == 0 || cached_n != a.cfg.n)
           for (int64_t i = 0; i < a.cfg.n; ++i) g_cached[i] = 2 * a.x[i] + 1;
         cached_n = a.cfg.n;
         for (int64_t i = 0; i < a.cfg.n; ++i) a.out[i] = to_bf16(g_cached[i]);
       }},
      {"jitter", [](const FakeArgs& a) {  // right every call, but the third element's last bit alternates
         good(a);
         if (g_calls++ % 2 == 1) a.out[2] ^= 1;
       }},
      {"throws", [](const FakeArgs&) { throw std::runtime_error("launch failed: invalid argument"); }},
  };
  return v;
}

const FakeVariant* g_current = nullptr;

VariantEntry fake_entry(const std::string& name, unsigned flags = kVariantNone) {
  for (const auto& f : fakes())
    if (name == f.name) g_current = &f;
  g_calls = 0;
  return VariantEntry{"fake", name, "test variant", Backend::cpu, {"x"},
                      [](const void*) -> std::size_t { return 64; },
                      [](const void* a) { g_current->fn(*static_cast<const FakeArgs*>(a)); }, __FILE__, flags};
}

class FakeProblem final : public Problem {
 public:
  std::string name() const override { return "fake"; }
  std::string description() const override { return "out = 2x + 1"; }
  std::vector<ShapeCase> test_shapes() const override { return {{{{"rows", 4}, {"cols", 64}}, 11, {}}, {{{"rows", 8}, {"cols", 32}}, 22, {}}}; }
  std::vector<ShapeCase> benchmark_shapes() const override {
    return {{{{"rows", 2}, {"cols", 64}}, 33, {}}, {{{"rows", 16}, {"cols", 64}}, 44, {}}};
  }
  Tolerance tolerance() const override { return {1e-2, 1e-2, 0.0}; }
  std::vector<TensorSpec> input_specs(const ShapeCase& s) const override {
    return {{"x", DType::f32, {s.get("rows"), s.get("cols")}}};
  }
  TensorSpec output_spec(const ShapeCase& s) const override { return {"out", DType::bf16, {s.get("rows"), s.get("cols")}}; }
  HostInputs generate(const ShapeCase& s, uint64_t seed) const override {
    HostInputs in;
    in.tensors.emplace_back(input_specs(s)[0]);
    auto* x = in.tensors[0].as<float>();
    for (int64_t i = 0; i < in.tensors[0].spec.numel(); ++i) x[i] = std::sin(0.1f * i + 0.37f * static_cast<float>(seed));
    return in;
  }
  std::vector<double> oracle(const ShapeCase&, const HostInputs& in) const override {
    const auto& t = in.at("x");
    std::vector<double> r(t.spec.numel());
    for (size_t i = 0; i < r.size(); ++i) r[i] = 2.0 * t.as<float>()[i] + 1.0;
    return r;
  }
  Cost cost(const ShapeCase& s, const std::vector<std::string>&) const override {
    const double n = static_cast<double>(s.get("rows") * s.get("cols"));
    return {n * 6, n * 2};
  }
  double strict_rel_l2_limit(const std::vector<std::string>&) const override { return 5e-3; }
  std::size_t workspace_bytes(const VariantEntry& v, const ShapeCase& s) const override {
    const FakeCfg c{s.get("rows") * s.get("cols")};
    return v.workspace_bytes(&c);
  }
  void invoke(const VariantEntry& v, const ShapeCase& s, const TensorPtrs& in, void* out, void* ws,
              std::size_t ws_bytes) const override {
    const FakeArgs a{{s.get("rows") * s.get("cols")}, static_cast<const float*>(in.at("x")), static_cast<uint16_t*>(out), ws, ws_bytes};
    v.launch(&a);
  }
};

RunResult run_fake(const std::string& variant, Mode mode, RunOptions o = {}, unsigned flags = kVariantNone) {
  static FakeProblem p;
  static auto dev = make_cpu_device();
  const VariantEntry v = fake_entry(variant, flags);
  o.mode = mode;
  o.timing.flush_bytes = 1 << 20;
  o.flush_bytes_given = true;
  if (!o.stop_rule) o.stop_rule = StopRule{3, 7, 5, 5, 0.0};  // never converges: stops at 7 runs
  return run_variant(*dev, p, v, o);
}

// A validator for the JSON-schema subset docs/results.schema.json uses.
void validate(const json& schema, const json& v, const std::string& path, std::vector<std::string>& errors) {
  if (schema.contains("anyOf")) {
    for (const auto& alt : schema["anyOf"]) {
      std::vector<std::string> e;
      validate(alt, v, path, e);
      if (e.empty()) return;
    }
    errors.push_back(path + ": matches no alternative");
    return;
  }
  if (schema.contains("type")) {
    const auto types = schema["type"].is_array() ? schema["type"] : json::array({schema["type"]});
    bool ok = false;
    for (const auto& t : types) {
      const auto s = t.get<std::string>();
      ok = ok || (s == "object" && v.is_object()) || (s == "array" && v.is_array()) || (s == "string" && v.is_string()) ||
           (s == "boolean" && v.is_boolean()) || (s == "null" && v.is_null()) || (s == "number" && v.is_number()) ||
           (s == "integer" && v.is_number_integer());
    }
    if (!ok) {
      errors.push_back(path + ": expected type " + schema["type"].dump() + ", got " + v.dump().substr(0, 40));
      return;
    }
  }
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
    errors.push_back(path + ": " + v.dump() + " not in " + schema["enum"].dump());
  if (v.is_object()) {
    for (const auto& k : schema.value("required", json::array()))
      if (!v.contains(k.get<std::string>())) errors.push_back(path + ": missing key " + k.get<std::string>());
    if (schema.contains("properties"))
      for (const auto& [k, sub] : schema["properties"].items())
        if (v.contains(k)) validate(sub, v[k], path + "." + k, errors);
  }
  if (v.is_array() && schema.contains("items"))
    for (size_t i = 0; i < v.size(); ++i) validate(schema["items"], v[i], path + "[" + std::to_string(i) + "]", errors);
}

json load_schema() {
  return json::parse(read_file(std::string(HARNESS_TEST_DATA_DIR) + "/../../docs/results.schema.json"));
}

}  // namespace

// Also used by test_cli.cpp on the files the real binary writes.
std::vector<std::string> schema_errors(const json& doc) {
  std::vector<std::string> e;
  validate(load_schema(), doc, "$", e);
  return e;
}

TEST_CASE("runner: a correct variant passes test mode, checked against the oracle") {
  const RunResult r = run_fake("good", Mode::test);
  INFO(r.reason);
  REQUIRE(r.passed);
  REQUIRE(r.shapes.size() == 2);
  CHECK(r.check_reference == "float64 oracle");
  CHECK(r.timing.device_method.find("steady_clock") != std::string::npos);
  for (const auto& s : r.shapes) {
    CHECK(s.status == "ok");
    CHECK(s.checks == 1);
    CHECK(s.stats.runs == 1);
    REQUIRE(s.official);
    CHECK(s.official->mismatches == 0);
    CHECK(s.official->total == s.params[0].second * s.params[1].second);
    REQUIRE(s.strict);
    CHECK(s.strict->rel_l2 > 0);  // bf16 rounding: not a copy of the reference
    CHECK(s.strict->rel_l2 < 5e-3);
  }
  CHECK(r.shapes[0].seed == 11);
  REQUIRE(r.score_ns);
  CHECK(*r.score_ns > 0);
}

TEST_CASE("runner: poisoned output, input mutation, guard overruns and throws are failures") {
  const auto reason = [](const char* v) {
    const RunResult r = run_fake(v, Mode::test);
    CHECK_FALSE(r.passed);
    CHECK(r.status == "failed");
    return r.shapes.at(0).reason;
  };
  CHECK(reason("nan").find("official check failed: 256 of 256") == 0);
  CHECK(reason("mutate") == "input mutated: x");
  CHECK(reason("overrun") == "wrote past the output");
  CHECK(reason("ws_overrun") == "wrote past the workspace");
  CHECK(reason("throws") == "launch failed: invalid argument");
  const RunResult biased = run_fake("biased", Mode::test);
  CHECK_FALSE(biased.passed);
  REQUIRE(biased.shapes[0].official);
  CHECK(biased.shapes[0].official->passed);
  CHECK(biased.shapes[0].reason.find("strict check failed") == 0);
}

TEST_CASE("runner: benchmark mode times to the stop rule and re-checks the last timed output") {
  const RunResult r = run_fake("good", Mode::benchmark);
  REQUIRE(r.passed);
  for (const auto& s : r.shapes) {
    CHECK(s.stats.runs == 7);
    CHECK(s.stop_reason == "max_runs");
    CHECK(s.checks == 2);  // warm-up + the call under the escaped-work check
    CHECK(s.settle_check == "unsupported");  // cpu device
    CHECK(s.host_exposed_timings == 0);
    CHECK(s.timed_seeds.empty());
    CHECK(s.stats.best <= s.stats.mean);
    CHECK(s.stats.mean <= s.stats.worst);
    // The cpu device knows no matrix rate: the floor is the bytes at the measured bandwidth.
    CHECK(s.floor_ns == Approx(s.bytes / r.device.bandwidth_bytes_per_s * 1e9));
  }
  const RunResult flaky = run_fake("flaky", Mode::benchmark);
  CHECK_FALSE(flaky.passed);
  CHECK(flaky.shapes[0].reason.find("official check failed") == 0);
  CHECK(flaky.shapes[0].stats.runs == 7);  // its timing is still reported
  // A replayed output is right in benchmark mode (same inputs) ...
  CHECK(run_fake("cache", Mode::benchmark).passed);
}

TEST_CASE("runner: benchmark mode compares the last output with the warm-up's, bit for bit") {
  for (const auto& s : run_fake("good", Mode::benchmark).shapes) {
    CHECK(s.repeat_check == "identical");
    CHECK(s.repeat_differing == 0);
  }
  // The warm-up is an even call, the last timed call (the cpu device makes no escaped-work call) an odd
  // one: they differ in the last bit of one element, within tolerance, so the run passes and says so.
  const RunResult jitter = run_fake("jitter", Mode::benchmark);
  REQUIRE(jitter.passed);
  for (const auto& s : jitter.shapes) {
    CHECK(s.repeat_check == "differs");
    CHECK(s.repeat_differing == 1);
    CHECK(s.repeat_max_abs > 0);
    CHECK(s.repeat_max_abs < 0.05);
  }
  std::FILE* f = std::tmpfile();
  cli::print_run_table(jitter, f);
  std::rewind(f);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  CHECK(text.find("not bit-repeatable: 1 of") != std::string::npos);
  // Test and leaderboard modes make no such comparison.
  CHECK(run_fake("good", Mode::test).shapes[0].repeat_check == "not run");
  CHECK(run_fake("jitter", Mode::leaderboard).shapes[0].repeat_check == "not run");
}

TEST_CASE("runner: leaderboard mode checks every timed call on fresh inputs (seed + 13)") {
  RunOptions o;
  o.secret_seed = 5;
  const RunResult r = run_fake("good", Mode::leaderboard, o);
  REQUIRE(r.passed);
  CHECK(r.seeds.secret_seed);
  const uint64_t base = 33 + (33 + 5) * (33 + 5 + 1) / 2;
  CHECK(r.shapes[0].seed == base);
  REQUIRE(r.shapes[0].timed_seeds.size() == 7);
  CHECK(r.shapes[0].timed_seeds[0] == base + 13);
  CHECK(r.shapes[0].timed_seeds[6] == base + 7 * 13);
  CHECK(r.shapes[0].checks == 8);  // warm-up on the first shape only
  CHECK(r.shapes[1].checks == 7);
  // ... but not in leaderboard mode.
  const RunResult cached = run_fake("cache", Mode::leaderboard);
  CHECK_FALSE(cached.passed);
  CHECK(cached.shapes[0].reason.find("official check failed") == 0);
}

TEST_CASE("runner: profile mode checks a warm-up and the one captured call, and times nothing") {
  const RunResult r = run_fake("good", Mode::profile);
  REQUIRE(r.passed);
  CHECK(r.mode == Mode::profile);
  for (const auto& s : r.shapes) {
    CHECK(s.checks == 2);
    CHECK(s.stats.runs == 0);
  }
  CHECK_FALSE(r.score_ns.has_value());
  // Both calls are checked: a variant that is right only on its first call fails.
  const RunResult flaky = run_fake("flaky", Mode::profile);
  CHECK_FALSE(flaky.passed);
  CHECK(flaky.shapes[0].reason.find("official check failed") == 0);
  CHECK_FALSE(run_fake("nan", Mode::profile).passed);
}

TEST_CASE("results: shape selection and seed override") {
  RunOptions o;
  o.shape_indices = {1};
  o.seed = 99;
  const RunResult r = run_fake("good", Mode::test, o);
  REQUIRE(r.shapes.size() == 1);
  CHECK(r.shapes[0].index == 1);
  CHECK(r.shapes[0].seed == 99);
  CHECK(r.seeds.seed_override == 99u);
}

TEST_CASE("results: --shape-set draws from the other list and names it in every label") {
  const RunResult own = run_fake("good", Mode::benchmark);
  CHECK(own.drawn_from() == ShapeSet::benchmark);
  REQUIRE(own.shapes.size() == 2);
  CHECK(own.shapes[0].label == "rows=2 cols=64");  // the mode's own list: labels as always
  CHECK(own.shapes[0].seed == 33);

  RunOptions o;
  o.shape_set = ShapeSet::test;
  o.shape_indices = {1};
  const RunResult r = run_fake("good", Mode::benchmark, o);
  REQUIRE(r.passed);
  CHECK(r.drawn_from() == ShapeSet::test);
  REQUIRE(r.shapes.size() == 1);
  CHECK(r.shapes[0].index == 1);
  CHECK(r.shapes[0].label == "test/rows=8 cols=32");  // never matches a benchmark shape's label
  CHECK(r.shapes[0].seed == 22);
  CHECK(r.shapes[0].stats.runs == 7);  // timed with the benchmark method
  const json j = to_json(r);
  CHECK(j["shape_set"] == "test");
  CHECK(run_from_json(j).drawn_from() == ShapeSet::test);
  json old = to_json(own);
  old.erase("shape_set");  // files written before the field: the mode's own list
  CHECK(run_from_json(old).drawn_from() == ShapeSet::benchmark);

  o.shape_set = ShapeSet::benchmark;
  o.shape_indices = {};
  const RunResult t = run_fake("good", Mode::test, o);
  REQUIRE(t.shapes.size() == 2);
  CHECK(t.shapes[1].label == "benchmark/rows=16 cols=64");
  CHECK(t.shapes[1].seed == 44);
}

TEST_CASE("results: custom shapes run as given, labelled custom/...") {
  RunOptions o;
  o.custom_shapes = {{{{"rows", 3}, {"cols", 16}}, 5, {}}};
  const RunResult r = run_fake("good", Mode::benchmark, o);
  REQUIRE(r.passed);
  CHECK(r.drawn_from() == ShapeSet::custom);
  REQUIRE(r.shapes.size() == 1);
  CHECK(r.shapes[0].label == "custom/rows=3 cols=16");
  CHECK(r.shapes[0].seed == 5);
  CHECK(r.shapes[0].official->total == 48);
  CHECK(to_json(r)["shape_set"] == "custom");
  CHECK(run_from_json(to_json(r)).drawn_from() == ShapeSet::custom);
}

TEST_CASE("results: --clean-flush is labelled not official and survives the JSON") {
  RunOptions o;
  o.timing.clean_flush = true;
  const RunResult r = run_fake("good", Mode::benchmark, o);
  REQUIRE(r.passed);
  CHECK(r.timing.clean_flush);
  CHECK(r.timing.method == "not official: clean flush");
  CHECK(r.timing.device_method.find("clean bytes read") != std::string::npos);
  const json j = to_json(r);
  CHECK(schema_errors(results_document({r})).empty());
  CHECK(run_from_json(j).timing.clean_flush);
  json old = j;
  old["timing"].erase("clean_flush");  // files written before the option
  CHECK_FALSE(run_from_json(old).timing.clean_flush);
  CHECK(run_fake("good", Mode::benchmark).timing.method == "official");
}

TEST_CASE("results JSON: a run matches the schema and round-trips") {
  const std::vector<RunResult> runs = {run_fake("good", Mode::benchmark), run_fake("nan", Mode::test),
                                       failed_run("fake", "x", Mode::test, "crashed: SIGSEGV")};
  const json doc = results_document(runs);
  const auto errors = schema_errors(doc);
  for (const auto& e : errors) INFO(e);
  CHECK(errors.empty());
  CHECK(doc["schema_version"] == 1);
  CHECK(doc["passed"] == false);
  CHECK(doc["runs"][1]["shapes"][0]["strict"]["rel_l2"].is_null());  // infinite: NaN output
  for (const auto& r : runs) {
    const json j = to_json(r);
    CHECK(to_json(run_from_json(j)) == j);
  }
  // The validator can fail: a missing key and a wrong type are caught.
  json bad = doc;
  bad["runs"][0]["shapes"][0].erase("mean_ns");
  bad["runs"][0]["device"]["compute_units"] = "two";
  CHECK(schema_errors(bad).size() == 2);
}

TEST_CASE("atomic write: replaces the file; a failed write leaves the old one intact") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("harness-atomic-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "r.json").string();
  write_file_atomic(path, std::string("old\n"));
  CHECK(read_file(path) == "old\n");
  CHECK_THROWS_WITH(write_file_atomic(path, [](std::ostream& os) {
                      os << "partial";
                      throw std::runtime_error("producer failed");
                    }),
                    "producer failed");
  CHECK(read_file(path) == "old\n");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);  // no temp left
  write_file_atomic(path, std::string("new\n"));
  CHECK(read_file(path) == "new\n");
  CHECK_THROWS(write_file_atomic((dir / "missing" / "r.json").string(), std::string("x")));
  write_results_file(path, {run_fake("good", Mode::test)});
  CHECK(schema_errors(json::parse(read_file(path))).empty());
  fs::remove_all(dir);
}

TEST_CASE("results: --inputs loads a shape's tensors from files; the digest says which inputs ran") {
  static FakeProblem p;
  const ShapeCase shape = p.test_shapes()[1];
  const auto dir = std::filesystem::temp_directory_path() / ("harness-inputs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const HostInputs in = p.generate(shape, 5);
  write_file_atomic((dir / "x.bin").string(),
                    std::string(reinterpret_cast<const char*>(in.tensors[0].data.data()), in.tensors[0].data.size()));
  CHECK(check_input_files(p, shape, dir.string()).empty());

  RunOptions o;
  o.shape_indices = {1};
  o.inputs_dir = dir.string();
  const RunResult loaded = run_fake("good", Mode::test, o);
  INFO(loaded.reason);
  CHECK(loaded.passed);
  CHECK(loaded.seeds.inputs_from == dir.string());
  RunOptions same, other;
  same.shape_indices = other.shape_indices = {1};
  same.seed = 5;
  other.seed = 6;
  const std::string digest = loaded.shapes.at(0).inputs_digest;
  CHECK(digest.size() == 16);
  CHECK(digest == run_fake("good", Mode::test, same).shapes.at(0).inputs_digest);
  CHECK(digest != run_fake("good", Mode::test, other).shapes.at(0).inputs_digest);

  write_file_atomic((dir / "x.bin").string(), "short");
  CHECK(check_input_files(p, shape, dir.string()).find("has 5 bytes") != std::string::npos);
  std::filesystem::remove(dir / "x.bin");
  CHECK(check_input_files(p, shape, dir.string()).find("is missing") != std::string::npos);
  std::filesystem::remove_all(dir);
  CHECK(check_input_files(p, shape, dir.string()).find("not a directory") != std::string::npos);
}

TEST_CASE("runner: a variant with 8-bit matrix operands gets floors at the 8-bit rate") {
  // Rates so low that every fake shape is matrix-bound: the floor is FLOPs / rate.
  EnvOverride bf16("HARNESS_MATRIX_TFLOPS", "1e-6");
  EnvOverride eight("HARNESS_MATRIX8_TFLOPS", "4e-6");
  const RunResult plain = run_fake("good", Mode::test);
  const RunResult fp8 = run_fake("good", Mode::test, {}, kVariantMatrix8bit);
  REQUIRE(plain.passed);
  REQUIRE(fp8.passed);
  CHECK(plain.device.matrix_flops_per_s == Approx(1e6));
  CHECK(fp8.device.matrix_flops_per_s == Approx(4e6));
  CHECK(fp8.device.matrix_flops_source == "HARNESS_MATRIX8_TFLOPS=4e-6");
  REQUIRE(fp8.shapes.size() == plain.shapes.size());
  for (size_t i = 0; i < plain.shapes.size(); ++i) {
    CHECK(plain.shapes[i].floor_ns == Approx(plain.shapes[i].flops / 1e6 * 1e9));
    CHECK(fp8.shapes[i].floor_ns == Approx(plain.shapes[i].floor_ns / 4));
  }
}
