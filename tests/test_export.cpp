// harness export (harness/export.hpp, harness/cli_export.cpp): the submission file of every GPU
// variant in the tree (works in a cpu build: export reads source text), the rules it enforces
// (forbidden word, 1 MB, declared inputs, no host harness code), and the command's exit codes.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/atomic_file.hpp"
#include "harness/build_info.hpp"
#include "harness/export.hpp"
#include "harness/variant_registry.hpp"
#include "tests/catch.hpp"

namespace fs = std::filesystem;
namespace ex = harness::exporter;

namespace {

std::string source_root() { return fs::weakly_canonical(fs::path(HARNESS_TEST_DATA_DIR) / ".." / "..").string(); }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Every GPU variant of the tree, "problem:name", known to every build.
std::vector<std::pair<std::string, std::string>> gpu_variants() {
  std::vector<std::pair<std::string, std::string>> out;
  std::string cur;
  for (char c : harness::build_info().all_gpu_variants + ",") {
    if (c != ',') {
      cur += c;
      continue;
    }
    const auto colon = cur.find(':');
    if (colon != std::string::npos) out.emplace_back(cur.substr(0, colon), cur.substr(colon + 1));
    cur.clear();
  }
  return out;
}

// A scratch project: problems/mla_decode/<name>.hip written from `body`; the real tree supplies
// the rest of the includes.
struct FakeTree {
  fs::path root;
  explicit FakeTree(const std::string& tag) {
    root = fs::temp_directory_path() / ("harness-export-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "problems" / "mla_decode");
  }
  ~FakeTree() { fs::remove_all(root); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
  ex::VariantSource variant(const std::string& name) const {
    return {"mla_decode", name, (root / "problems" / "mla_decode" / (name + ".hip")).string(),
            {root.string(), source_root()}};
  }
};

std::string fake_variant(const std::string& name, const std::string& reads, const std::string& extra) {
  return "#include \"problems/mla_decode/mla_api.h\"\n" + extra +
         "\nnamespace {\nsize_t workspace_bytes(const MlaDecodeConfig&) { return 0; }\n"
         "void launch(const MlaDecodeArgs&) {}\n}  // namespace\n"
         "MLA_DECODE_VARIANT(\"" + name + "\", gpu, \"a fake, (with, commas)\",\n    \"" + reads + "\", 0);\n";
}

struct Ran {
  int code = -1;
  std::string output;
};

Ran harness_cmd(const std::string& args) {
  Ran r;
  FILE* f = ::popen((std::string(HARNESS_BINARY) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(f != nullptr);
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(f);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST_CASE("export: every GPU variant of the tree becomes a self-contained submission") {
  const auto variants = gpu_variants();
  REQUIRE(variants.size() >= 2);
  for (const auto& [problem, name] : variants) {
    INFO(problem << " " << name);
    const auto src = ex::locate_variant(problem, name, source_root());
    const auto sub = ex::build_submission(src);
    const std::string& t = sub.text;
    CHECK(t.find("def custom_kernel(data):") != std::string::npos);
    CHECK(t.find("load_inline(") != std::string::npos);
    CHECK(t.find("\n#define HARNESS_SUBMISSION 1\n") < t.find("==== begin problems/"));
    CHECK(t.find("harness_custom_kernel") != std::string::npos);
    CHECK(lower(t).find("stream") == std::string::npos);
    CHECK(t.size() <= ex::kMaxSubmissionBytes);
    // The variant's own code and the headers it pulls in are there, each once; no host harness code.
    REQUIRE(sub.files.size() >= 2);
    CHECK(sub.files[0] == "problems/" + problem + "/" + name + ".hip");
    for (const auto& f : sub.files) CHECK(count(t, "// ==== begin " + f + " ====\n") == 1);
    CHECK(count(t, "==== begin problems/common/portability.h ====") == 1);
    CHECK(std::find(sub.files.begin(), sub.files.end(), "problems/common/hip_to_cuda.h") != sub.files.end());
    CHECK(t.find("#include \"") == std::string::npos);
    CHECK(t.find("#pragma once") == std::string::npos);
    CHECK(t.find("variant_registry") == std::string::npos);
    CHECK(t.find("VariantRegistrar") == std::string::npos);
    CHECK(t.find("HARNESS_REGISTER_VARIANT") == std::string::npos);
    // A line unique to the variant's file made it in.
    const std::string own = harness::read_file(src.main_file);
    const auto reg = own.find(problem == "mla_decode" ? "MLA_DECODE_VARIANT(" : "MOE_MXFP4_VARIANT(");
    REQUIRE(reg != std::string::npos);
    CHECK(t.find(own.substr(reg, own.find('\n', reg) - reg)) != std::string::npos);
    // The binding hands over exactly the declared inputs.
    const auto& inputs = ex::official_inputs(problem);
    std::string flags;
    for (const auto& in : inputs) {
      const bool read = std::find(sub.reads.begin(), sub.reads.end(), in) != sub.reads.end();
      flags += std::string(flags.empty() ? "" : ", ") + (read ? "true" : "false");
    }
    CHECK(t.find("constexpr bool kReads[kInputs] = {" + flags + "};") != std::string::npos);
  }
}

TEST_CASE("export: reads parsed from source text agree with the compiled registry") {
  int compared = 0;
  for (const auto& v : harness::variant_registry()) {
    if (v.problem != "mla_decode" && v.problem != "moe_mxfp4") continue;
    if (!fs::is_regular_file(v.source_file)) continue;
    INFO(v.problem << " " << v.name << " " << v.source_file);
    CHECK(ex::declared_reads(harness::read_file(v.source_file), v.problem) == v.reads);
    ++compared;
  }
  CHECK(compared >= 2);  // at least the two cpu variants
  CHECK(ex::declared_reads("MOE_MXFP4_VARIANT(\"x\", gpu, \"d, (e)\", \"a,\" \"b\" /* c, */, 0);", "moe_mxfp4") ==
        std::vector<std::string>{"a", "b"});
  CHECK_THROWS_AS(ex::declared_reads("int main() {}", "mla_decode"), ex::ExportError);
}

TEST_CASE("export: the forbidden word anywhere is rejected, naming file and line") {
  FakeTree tree("word");
  tree.write("problems/mla_decode/clean.hip", fake_variant("clean", "q,kv_bf16,kv_indptr", "// plain"));
  const auto ok = ex::build_submission(tree.variant("clean"));
  CHECK(ok.reads == std::vector<std::string>{"q", "kv_bf16", "kv_indptr"});
  CHECK(ok.text.find("constexpr bool kReads[kInputs] = {true, true, false, false, false, false, false, true};") !=
        std::string::npos);

  tree.write("problems/mla_decode/commented.hip",
             fake_variant("commented", "q,kv_bf16,kv_indptr", "// overlaps copies with a second CUDA Stream"));
  try {
    ex::build_submission(tree.variant("commented"));
    FAIL("accepted a source with the word in a comment");
  } catch (const ex::ExportError& e) {
    CHECK(std::string(e.what()).find("problems/mla_decode/commented.hip:2") != std::string::npos);
  }
  // In an included header too.
  tree.write("problems/common/fake_helper.h", "#pragma once\n\n/* upSTREAMing */\n");
  tree.write("problems/mla_decode/viaheader.hip",
             fake_variant("viaheader", "q", "#include \"problems/common/fake_helper.h\""));
  try {
    ex::build_submission(tree.variant("viaheader"));
    FAIL("accepted a header with the word");
  } catch (const ex::ExportError& e) {
    CHECK(std::string(e.what()).find("problems/common/fake_helper.h:3") != std::string::npos);
  }
  CHECK_THROWS_AS(ex::check_submission_rules("x = 1  # Streams"), ex::ExportError);
}

TEST_CASE("export: the 1 MB limit") {
  CHECK_NOTHROW(ex::check_submission_rules(std::string(ex::kMaxSubmissionBytes, 'x')));
  CHECK_THROWS_AS(ex::check_submission_rules(std::string(ex::kMaxSubmissionBytes + 1, 'x')), ex::ExportError);
  FakeTree tree("size");
  std::string big;
  while (big.size() < ex::kMaxSubmissionBytes) big += "// padding padding padding padding padding padding padding\n";
  tree.write("problems/mla_decode/huge.hip", fake_variant("huge", "q", big));
  try {
    ex::build_submission(tree.variant("huge"));
    FAIL("accepted a submission over 1 MB");
  } catch (const ex::ExportError& e) {
    CHECK(std::string(e.what()).find("over the official limit") != std::string::npos);
  }
}

TEST_CASE("export: HARNESS_SUBMISSION guards are evaluated; live host includes, unknown reads rejected") {
  FakeTree tree("guards");
  tree.write("problems/mla_decode/guarded.hip",
             fake_variant("guarded", "q",
                          "#ifndef HARNESS_SUBMISSION\n#include \"harness/variant_registry.hpp\"\nint host_only;\n"
                          "#else\nint submission_only;\n#endif\n#if defined(__CUDACC__)\nint kept_as_is;\n#endif"));
  const auto sub = ex::build_submission(tree.variant("guarded"));
  CHECK(sub.text.find("host_only") == std::string::npos);
  CHECK(sub.text.find("int submission_only;") != std::string::npos);
  CHECK(sub.text.find("#if defined(__CUDACC__)\nint kept_as_is;\n#endif") != std::string::npos);

  tree.write("problems/mla_decode/hostinc.hip", fake_variant("hostinc", "q", "#include \"harness/tensor.hpp\""));
  CHECK_THROWS_AS(ex::build_submission(tree.variant("hostinc")), ex::ExportError);
  tree.write("problems/mla_decode/badread.hip", fake_variant("badread", "q,kv_secret", ""));
  CHECK_THROWS_AS(ex::build_submission(tree.variant("badread")), ex::ExportError);
  tree.write("problems/mla_decode/misnamed.hip", fake_variant("other", "q", ""));
  CHECK_THROWS_AS(ex::build_submission(tree.variant("misnamed")), ex::ExportError);
  // A name given by a macro compiles, but the exporter reads the text: it says what it needs.
  std::string by_macro = fake_variant("bymacro", "q", "#define MY_NAME \"bymacro\"");
  by_macro.replace(by_macro.find("\"bymacro\", gpu"), 9, "MY_NAME");
  tree.write("problems/mla_decode/bymacro.hip", by_macro);
  CHECK_THROWS_WITH(ex::build_submission(tree.variant("bymacro")),
                    Catch::Contains("names its variant with 'MY_NAME'; export needs a string literal"));
}

TEST_CASE("export: unknown problems, unknown or host variants are errors naming the choices") {
  CHECK_THROWS_AS(ex::locate_variant("nope", "v1", source_root()), ex::ExportError);
  CHECK_THROWS_AS(ex::locate_variant("mla_decode", "nope", source_root()), ex::ExportError);
  CHECK_THROWS_AS(ex::locate_variant("mla_decode", "cpu", source_root()), ex::ExportError);
  try {
    ex::locate_variant("mla_decode", "nope", source_root());
  } catch (const ex::ExportError& e) {
    CHECK(std::string(e.what()).find("reference") != std::string::npos);
  }
}

TEST_CASE("export: the command writes the file atomically; errors are one line with exit code 2") {
  const auto variants = gpu_variants();
  REQUIRE(!variants.empty());
  const auto& [problem, name] = variants.front();
  const fs::path out = fs::temp_directory_path() / ("harness-export-cli-" + std::to_string(::getpid()) + ".py");
  const Ran ok = harness_cmd("export " + problem + " --variant " + name + " -o " + out.string() + " --source-dir " +
                             source_root());
  INFO(ok.output);
  CHECK(ok.code == 0);
  const std::string expected = ex::build_submission(ex::locate_variant(problem, name, source_root())).text;
  CHECK(harness::read_file(out.string()) == expected);
  fs::remove(out);

  // -o naming an existing directory: <problem>__<variant>.py inside it.
  const fs::path dir = fs::temp_directory_path() / ("harness-export-dir-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const Ran into = harness_cmd("export " + problem + " --variant " + name + " -o " + dir.string() + " --source-dir " +
                               source_root());
  INFO(into.output);
  CHECK(into.code == 0);
  const fs::path in_dir = dir / (problem + "__" + name + ".py");
  CHECK(fs::is_regular_file(in_dir));
  if (fs::is_regular_file(in_dir)) CHECK(harness::read_file(in_dir.string()) == expected);
  fs::remove_all(dir);

  for (const std::string args : {"export mla_decode --variant nope -o " + out.string(),
                                 "export nope --variant v1 -o " + out.string(),
                                 "export moe_mxfp4 --variant cpu -o " + out.string()}) {
    const Ran r = harness_cmd(args);
    INFO(args << "\n" << r.output);
    CHECK(r.code == 2);
    CHECK(r.output.rfind("harness: error: ", 0) == 0);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(!fs::exists(out));
  }
}

TEST_CASE("variant sources: 8-bit matrix instructions come with the kVariantMatrix8bit registration flag") {
  // The flag sets the rate of the variant's floors (harness/matrix_rate.hpp): a variant that can feed fp8 or
  // int8 operands to the matrix units is held to the 8-bit rate, however its dispatch picks paths.
  const std::vector<std::string> eight_bit_mnemonics = {".e4m3.e4m3", ".s32.s8.s8"};
  int flagged = 0, checked = 0;
  for (const char* problem : {"mla_decode", "moe_mxfp4"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(source_root()) / "problems" / problem)) {
      const std::string file = entry.path().filename().string();
      if (file.size() < 5 || file[0] != 'v' || entry.path().extension() != ".hip") continue;
      const std::string code = ex::inline_sources(entry.path().string(), {source_root()}).code;
      bool uses = false;
      for (const auto& m : eight_bit_mnemonics) uses = uses || code.find(m) != std::string::npos;
      INFO(problem << "/" << file);
      const bool has_flag = harness::read_file(entry.path().string()).find("kVariantMatrix8bit") != std::string::npos;
      CHECK(has_flag == uses);
      flagged += uses;
      ++checked;
    }
  }
  CHECK(flagged > 0);
  CHECK(checked > flagged);
}
