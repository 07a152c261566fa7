#include "harness/export.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/build_info.hpp"
#include "harness/export_templates/python_templates.hpp"
#include "harness/variant_registry.hpp"

namespace harness::exporter {

namespace fs = std::filesystem;

namespace {

constexpr const char* kForbidden = "stream";

std::string join(const std::vector<std::string>& v, const char* sep) { return fmt::format("{}", fmt::join(v, sep)); }

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw ExportError(fmt::format("cannot read {}", p.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

void replace_all(std::string& text, const std::string& key, const std::string& value) {
  const std::string tag = "@@" + key + "@@";
  for (auto pos = text.find(tag); pos != std::string::npos; pos = text.find(tag, pos + value.size()))
    text.replace(pos, tag.size(), value);
}

// ---- preprocessor lines ----

// "#  include ..." -> "include ..."; empty if the line is no directive.
std::string directive_of(const std::string& line) {
  const std::string t = trim(line);
  if (t.empty() || t[0] != '#') return "";
  std::string rest = trim(t.substr(1));
  const auto comment = rest.find("//");
  if (comment != std::string::npos) rest = trim(rest.substr(0, comment));
  return rest;
}

std::string directive_word(const std::string& d) {
  std::size_t i = 0;
  while (i < d.size() && (std::isalpha(static_cast<unsigned char>(d[i])) || d[i] == '_')) ++i;
  return d.substr(0, i);
}

std::string without_spaces(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

// Truth of a conditional about HARNESS_SUBMISSION alone (defined, as 1); -1 if it is about more.
int submission_condition(const std::string& word, const std::string& rest) {
  const std::string c = without_spaces(rest);
  const std::string m = "HARNESS_SUBMISSION";
  if (word == "ifdef") return c == m ? 1 : -1;
  if (word == "ifndef") return c == m ? 0 : -1;
  if (word != "if") return -1;
  if (c == m || c == "defined(" + m + ")" || c == "defined" + m) return 1;
  if (c == "!defined(" + m + ")" || c == "!defined" + m || c == "!" + m) return 0;
  return -1;
}

struct Conditional {
  bool known;  // a HARNESS_SUBMISSION guard, evaluated here and dropped from the output
  bool live;   // for known guards: the branch being read is compiled
};

class Inliner {
 public:
  explicit Inliner(std::vector<std::string> roots) : roots_(std::move(roots)) {}

  Inlined run(const std::string& main_file) {
    const fs::path p = fs::weakly_canonical(fs::path(main_file));
    if (!fs::is_regular_file(p)) throw ExportError(fmt::format("variant source {} not found", main_file));
    const std::string name = display_name(p);
    seen_.insert(p.string());
    out_.files.push_back(name);
    emit_file(p, name);
    return std::move(out_);
  }

 private:
  std::string display_name(const fs::path& p) const {
    const std::string ps = p.generic_string();
    for (const auto& r : roots_) {
      std::string rs = fs::weakly_canonical(fs::path(r)).generic_string();
      while (!rs.empty() && rs.back() == '/') rs.pop_back();
      if (ps.rfind(rs + "/", 0) == 0) return ps.substr(rs.size() + 1);
    }
    return p.filename().string();
  }

  fs::path resolve(const std::string& inc, const fs::path& from, const std::string& where) const {
    for (const auto& r : roots_) {
      const fs::path c = fs::path(r) / inc;
      if (fs::is_regular_file(c)) return fs::weakly_canonical(c);
    }
    const fs::path c = from.parent_path() / inc;
    if (fs::is_regular_file(c)) return fs::weakly_canonical(c);
    throw ExportError(fmt::format("{}: include \"{}\" not found under {}", where, inc, join(roots_, ", ")));
  }

  static bool all_live(const std::vector<Conditional>& stack) {
    return std::all_of(stack.begin(), stack.end(), [](const Conditional& c) { return !c.known || c.live; });
  }

  void emit_file(const fs::path& path, const std::string& name) {
    const std::string text = read_text(path);
    out_.code += fmt::format("// ==== begin {} ====\n#line 1 \"{}\"\n", name, name);
    std::vector<Conditional> stack;
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    bool continued = false;  // the previous line ended in a backslash: this one is no directive
    while (std::getline(in, line)) {
      ++lineno;
      const std::string where = fmt::format("{}:{}", name, lineno);
      const bool is_continuation = continued;
      continued = !line.empty() && line.back() == '\\';
      const std::string d = is_continuation ? "" : directive_of(line);
      const std::string word = directive_word(d);
      const std::string rest = d.substr(word.size());
      if (word == "if" || word == "ifdef" || word == "ifndef") {
        const int truth = submission_condition(word, rest);
        stack.push_back({truth >= 0, truth == 1});
        if (truth >= 0) continue;
      } else if (word == "elif" || word == "else" || word == "endif") {
        if (stack.empty()) throw ExportError(fmt::format("{}: #{} without #if", where, word));
        if (stack.back().known) {
          if (word == "elif") throw ExportError(fmt::format("{}: #elif after a HARNESS_SUBMISSION guard", where));
          if (word == "else") stack.back().live = !stack.back().live;
          if (word == "endif") stack.pop_back();
          continue;
        }
        if (word == "endif") {
          const bool live = all_live(stack);
          stack.pop_back();
          if (live) emit_line(line, where);
          continue;
        }
      }
      if (!all_live(stack)) continue;
      if (word == "pragma" && without_spaces(rest) == "once") continue;
      if (word == "include") {
        const std::string r = trim(rest);
        if (!r.empty() && r[0] == '"') {
          const auto close = r.find('"', 1);
          if (close == std::string::npos) throw ExportError(fmt::format("{}: malformed #include", where));
          include(r.substr(1, close - 1), path, name, lineno, where);
          continue;
        }
      }
      emit_line(line, where);
    }
    if (!stack.empty()) throw ExportError(fmt::format("{}: unterminated #if", name));
    out_.code += fmt::format("// ==== end {} ====\n", name);
  }

  void include(const std::string& inc, const fs::path& from, const std::string& from_name, int lineno,
               const std::string& where) {
    if (inc.rfind("harness/", 0) == 0)
      throw ExportError(fmt::format("{}: includes \"{}\", host harness code that cannot go into a submission", where,
                                    inc));
    const fs::path p = resolve(inc, from, where);
    if (!seen_.insert(p.string()).second) return;  // each file once (#pragma once)
    const std::string name = display_name(p);
    out_.files.push_back(name);
    emit_file(p, name);
    out_.code += fmt::format("#line {} \"{}\"\n", lineno + 1, from_name);
  }

  void emit_line(const std::string& line, const std::string& where) {
    check_no_forbidden_word(line, where);
    out_.code += line;
    out_.code += '\n';
  }

  std::vector<std::string> roots_;
  std::set<std::string> seen_;
  Inlined out_;
};

// ---- the registration macro in source text ----

// Top-level arguments of the call whose '(' is at text[open].
std::vector<std::string> macro_arguments(const std::string& text, std::size_t open) {
  std::vector<std::string> args(1);
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') {  // literal: copy through its closing quote
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != c) j += text[j] == '\\' ? 2 : 1;
      if (depth >= 1) args.back() += text.substr(i, j - i + 1);
      i = j;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      const bool line = text[i + 1] == '/';
      const auto end = text.find(line ? "\n" : "*/", i + 2);
      if (end == std::string::npos) break;
      i = end + (line ? 0 : 1);
      continue;
    }
    if (c == '(') {
      if (depth++ == 0) continue;
    } else if (c == ')') {
      if (--depth == 0) return args;
    } else if (c == ',' && depth == 1) {
      args.emplace_back();
      continue;
    }
    if (depth >= 1) args.back() += c;
  }
  throw ExportError("unterminated variant registration");
}

// Contents of the adjacent string literals in `arg` ("a" "b" -> ab); no escapes expected in reads.
std::string literal_contents(const std::string& arg) {
  std::string out;
  for (std::size_t i = 0; i < arg.size(); ++i) {
    if (arg[i] != '"') continue;
    const auto close = arg.find('"', i + 1);
    if (close == std::string::npos) break;
    out += arg.substr(i + 1, close - i - 1);
    i = close;
  }
  return out;
}

std::string macro_for(const std::string& problem) {
  if (problem == "mla_decode") return "MLA_DECODE_VARIANT";
  if (problem == "moe_mxfp4") return "MOE_MXFP4_VARIANT";
  throw ExportError(fmt::format("unknown problem '{}' (valid: {})", problem, join(exportable_problems(), ", ")));
}

// The registration's arguments: name, backend, description, reads, flags.
std::vector<std::string> registration(const std::string& text, const std::string& problem) {
  const std::string macro = macro_for(problem);
  for (auto pos = text.find(macro); pos != std::string::npos; pos = text.find(macro, pos + 1)) {
    const auto line_start = text.rfind('\n', pos) + 1;  // npos + 1 == 0
    if (directive_of(text.substr(line_start, pos - line_start + 1)) != "") continue;  // the #define
    auto open = pos + macro.size();
    while (open < text.size() && std::isspace(static_cast<unsigned char>(text[open]))) ++open;
    if (open >= text.size() || text[open] != '(') continue;
    auto args = macro_arguments(text, open);
    if (args.size() != 5) throw ExportError(fmt::format("{}(...) takes 5 arguments, found {}", macro, args.size()));
    return args;
  }
  throw ExportError(fmt::format("no {}(...) registration in the variant source", macro));
}

// ---- rendering ----

std::string quoted_list(const std::vector<std::string>& v) {
  std::vector<std::string> q;
  for (const auto& s : v) q.push_back("\"" + s + "\"");
  return join(q, ", ");
}

// The text goes into a Python r"""...""" literal: it must not close it early or end in a backslash.
void check_raw_literal(const std::string& text, const char* what) {
  if (text.find("\"\"\"") != std::string::npos)
    throw ExportError(fmt::format("{} contains three double quotes in a row, which would end its Python string", what));
  if (!text.empty() && text.back() == '\\') throw ExportError(fmt::format("{} ends in a backslash", what));
}

std::string module_name(const std::string& problem, const std::string& variant) {
  std::string m = "harness_" + problem + "_" + variant;
  for (char& c : m)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return m;
}

}  // namespace

const std::vector<std::string>& exportable_problems() {
  static const std::vector<std::string> p{"mla_decode", "moe_mxfp4"};
  return p;
}

const std::vector<std::string>& official_inputs(const std::string& problem) {
  static const std::vector<std::string> mla{"q",        "kv_bf16",        "kv_fp8",    "kv_fp8_scale",
                                            "kv_mxfp4", "kv_mxfp4_scale", "qo_indptr", "kv_indptr"};
  static const std::vector<std::string> moe{"hidden_states",
                                            "gate_up_weight",
                                            "down_weight",
                                            "gate_up_weight_scale",
                                            "down_weight_scale",
                                            "gate_up_weight_shuffled",
                                            "down_weight_shuffled",
                                            "gate_up_weight_scale_shuffled",
                                            "down_weight_scale_shuffled",
                                            "topk_weights",
                                            "topk_ids"};
  if (problem == "mla_decode") return mla;
  if (problem == "moe_mxfp4") return moe;
  macro_for(problem);  // throws the one-line error naming the choices
  return mla;
}

std::vector<std::string> declared_reads(const std::string& source_text, const std::string& problem) {
  const auto args = registration(source_text, problem);
  auto reads = split_list(literal_contents(args[3]));
  if (reads.empty()) throw ExportError("the variant registration declares no inputs (its reads string is empty)");
  return reads;
}

Inlined inline_sources(const std::string& main_file, const std::vector<std::string>& include_roots) {
  return Inliner(include_roots).run(main_file);
}

void check_no_forbidden_word(const std::string& text, const std::string& what) {
  const std::string l = lower(text);
  const auto pos = l.find(kForbidden);
  if (pos == std::string::npos) return;
  const auto line = 1 + std::count(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(pos), '\n');
  const bool one_line = l.find('\n') == std::string::npos;
  throw ExportError(fmt::format("{}{} contains the word \"{}\" (any case), which the official runner rejects", what,
                                one_line ? "" : fmt::format(" line {}", line), kForbidden));
}

void check_submission_rules(const std::string& text) {
  check_no_forbidden_word(text, "the submission");
  if (text.size() > kMaxSubmissionBytes)
    throw ExportError(
        fmt::format("the submission is {} bytes, over the official limit of {} bytes", text.size(), kMaxSubmissionBytes));
}

std::string configured_source_dir() {
#ifdef HARNESS_SOURCE_DIR
  return HARNESS_SOURCE_DIR;
#else
  return "";
#endif
}

std::vector<std::string> exportable_variants(const std::string& problem) {
  std::vector<std::string> gpu;
  for (const auto& v : variant_registry())
    if (v.problem == problem && !(v.flags & kVariantPlanted) && v.backend == Backend::gpu) gpu.push_back(v.name);
  for (const auto& entry : split_list(build_info().all_gpu_variants)) {  // also those a cpu build did not compile
    const auto colon = entry.find(':');
    if (colon == std::string::npos || entry.substr(0, colon) != problem) continue;
    const auto name = entry.substr(colon + 1);
    if (std::find(gpu.begin(), gpu.end(), name) == gpu.end()) gpu.push_back(name);
  }
  std::sort(gpu.begin(), gpu.end());
  return gpu;
}

VariantSource locate_variant(const std::string& problem, const std::string& variant, const std::string& source_root) {
  official_inputs(problem);  // validates the problem
  std::string root = source_root;
  if (root.empty()) root = fs::is_directory(configured_source_dir()) ? configured_source_dir() : ".";

  const std::vector<std::string> gpu = exportable_variants(problem);
  const VariantEntry* compiled = nullptr;
  for (const auto& v : variant_registry())
    if (v.problem == problem && !(v.flags & kVariantPlanted) && v.name == variant) compiled = &v;
  if (compiled && compiled->backend != Backend::gpu)
    throw ExportError(fmt::format("variant '{}' of {} runs on the host and cannot be exported (GPU variants: {})",
                                  variant, problem, join(gpu, ", ")));
  if (std::find(gpu.begin(), gpu.end(), variant) == gpu.end())
    throw ExportError(fmt::format("unknown variant '{}' for {} (GPU variants: {})", variant, problem, join(gpu, ", ")));

  std::string rel = fmt::format("problems/{}/{}.hip", problem, variant);
  const std::string configured = configured_source_dir() + "/";
  if (compiled && !configured_source_dir().empty() && compiled->source_file.rfind(configured, 0) == 0)
    rel = compiled->source_file.substr(configured.size());
  const fs::path main = fs::path(root) / rel;
  if (!fs::is_regular_file(main))
    throw ExportError(fmt::format("source of {} variant '{}' not found at {} (pass --source-dir)", problem, variant,
                                  main.string()));
  return {problem, variant, main.string(), {root}};
}

Submission build_submission(const VariantSource& src) {
  namespace t = templates;
  const auto& inputs = official_inputs(src.problem);
  const std::string source_text = read_text(src.main_file);
  const auto args = registration(source_text, src.problem);
  const std::string registered = literal_contents(args[0]);
  if (args[0].find('"') == std::string::npos)  // e.g. a macro: the exporter reads the text, not the preprocessor
    throw ExportError(fmt::format("{}: the registration names its variant with '{}'; export needs a string literal",
                                  src.main_file, args[0]));
  if (registered != src.variant)
    throw ExportError(fmt::format("{} registers variant '{}', not '{}'", src.main_file, registered, src.variant));

  Submission sub;
  sub.reads = declared_reads(source_text, src.problem);
  for (const auto& r : sub.reads)
    if (std::find(inputs.begin(), inputs.end(), r) == inputs.end())
      throw ExportError(fmt::format("variant '{}' declares read '{}', which is not an official input of {} (inputs: {})",
                                    src.variant, r, src.problem, join(inputs, ", ")));
  std::vector<std::string> unread, flags;
  for (const auto& in : inputs) {
    const bool read = std::find(sub.reads.begin(), sub.reads.end(), in) != sub.reads.end();
    flags.push_back(read ? "true" : "false");
    if (!read) unread.push_back(in);
  }

  const Inlined inl = inline_sources(src.main_file, src.include_roots);
  sub.files = inl.files;
  const bool mla = src.problem == "mla_decode";

  std::string kernels = std::string(t::kKernelPreamble) + inl.code + (mla ? t::kMlaGlue : t::kMoeGlue);
  std::string binding = t::kBinding;
  replace_all(binding, "N_INPUTS", std::to_string(inputs.size()));
  replace_all(binding, "INPUT_NAMES", quoted_list(inputs));
  replace_all(binding, "READ_FLAGS", join(flags, ", "));
  replace_all(binding, "OUT_SHAPE", mla ? t::kMlaOutShape : t::kMoeOutShape);
  for (auto* text : {&kernels, &binding}) {
    replace_all(*text, "PROBLEM", src.problem);
    replace_all(*text, "VARIANT", src.variant);
  }
  check_raw_literal(kernels, "the inlined GPU code");
  check_raw_literal(binding, "the binding code");

  std::string py = t::kSubmission;
  replace_all(py, "PROBLEM", src.problem);
  replace_all(py, "VARIANT", src.variant);
  replace_all(py, "VERSION", build_info().version);
  replace_all(py, "COMMIT", build_info().git_commit);
  replace_all(py, "READS", join(sub.reads, ", "));
  replace_all(py, "UNREAD", unread.empty() ? std::string("none") : join(unread, ", "));
  replace_all(py, "FILES", join(sub.files, ", "));
  replace_all(py, "MODULE", module_name(src.problem, src.variant));
  replace_all(py, "CUSTOM_KERNEL", mla ? t::kMlaCustomKernel : t::kMoeCustomKernel);
  // Last: the code may contain anything, including text that looks like a placeholder.
  replace_all(py, "BINDING", binding);
  replace_all(py, "KERNELS", kernels);
  check_submission_rules(py);
  sub.text = std::move(py);
  return sub;
}

}  // namespace harness::exporter
