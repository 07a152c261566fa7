// `harness export`: turns a GPU variant into one official submission file (submission.py) that
// compiles the variant with torch.utils.cpp_extension.load_inline and defines custom_kernel(data).
// Works on source text only, so every build (cpu included) can export every GPU variant.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness::exporter {

// A rule broken or a bad request; the CLI prints it as one line and exits 2.
struct ExportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr std::size_t kMaxSubmissionBytes = 1024 * 1024;  // evaluation.md: at most 1 MB

// Problems that can be exported, and their official inputs in data-tuple order (config excluded).
const std::vector<std::string>& exportable_problems();
const std::vector<std::string>& official_inputs(const std::string& problem);  // throws ExportError

// The read list of the <PROBLEM>_VARIANT(name, backend, "desc", "reads", flags) registration in a
// variant's source text (adjacent string literals are joined). Throws ExportError if absent.
std::vector<std::string> declared_reads(const std::string& source_text, const std::string& problem);

// A source with every project include (#include "...") inlined once, recursively.
struct Inlined {
  std::string code;
  std::vector<std::string> files;  // inlined files, as named in the includes (main file first)
};
// Includes are resolved against include_roots in order, then against the including file's folder.
// #pragma once is dropped (each file is inlined once anyway); HARNESS_SUBMISSION guards
// (#ifdef / #ifndef / #if [!]defined(HARNESS_SUBMISSION)) are evaluated as defined, so dead branches
// vanish with the includes in them. A live include under harness/ is an ExportError: host code.
Inlined inline_sources(const std::string& main_file, const std::vector<std::string>& include_roots);

// Throws ExportError naming the file and line if `text` contains "stream" in any case.
void check_no_forbidden_word(const std::string& text, const std::string& what);

// The file rules of evaluation.md ("What a submission is"): no forbidden word, at most 1 MB.
void check_submission_rules(const std::string& text);

// Where a variant's source is.
struct VariantSource {
  std::string problem;
  std::string variant;
  std::string main_file;                   // path to the variant's source
  std::vector<std::string> include_roots;  // the project root first
};

// Finds a GPU variant (compiled into this build or only known by name), under source_root
// (empty: HARNESS_SOURCE_DIR if it exists, else the current directory). Throws ExportError naming
// the valid choices for an unknown problem or variant, or a host-only variant.
// Every GPU variant of the problem in the source tree (compiled into this build or not), sorted.
std::vector<std::string> exportable_variants(const std::string& problem);
VariantSource locate_variant(const std::string& problem, const std::string& variant, const std::string& source_root);

struct Submission {
  std::string text;                 // the whole submission.py
  std::vector<std::string> files;   // inlined sources
  std::vector<std::string> reads;   // the inputs the binding hands over; the others are nullptr
};
Submission build_submission(const VariantSource& src);

// The project root this build was configured from ("" if unknown).
std::string configured_source_dir();

}  // namespace harness::exporter
