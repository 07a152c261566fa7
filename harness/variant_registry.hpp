// Variants register themselves from their own source file; adding a variant edits no other file.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

enum class Backend { cpu, gpu };

enum VariantFlags : unsigned {
  kVariantNone = 0,
  kVariantReference = 1u << 0,  // the GPU reference that timed outputs are checked against
  kVariantPlanted = 1u << 1,    // deliberately faulty, test builds only
  kVariantMatrix8bit = 1u << 2, // feeds 8-bit operands (fp8 / int8) to matrix instructions on some shape:
                                // its floors use the device's 8-bit dense rate (harness/matrix_rate.hpp)
};

struct VariantEntry {
  std::string problem;
  std::string name;
  std::string description;
  Backend backend;
  std::vector<std::string> reads;  // names of the input tensors the variant reads
  // Type-erased entry points; the problem casts to its own Config / Args structs.
  std::size_t (*workspace_bytes)(const void* config);
  void (*launch)(const void* args);
  std::string source_file;  // the variant's source, for export
  unsigned flags = kVariantNone;
};

std::vector<VariantEntry>& variant_registry();
const VariantEntry* find_variant(const std::string& problem, const std::string& name);
// "" when every (problem, name) is registered once, else a one-line description of the first name registered
// twice (a variant file that includes another one must guard the included file's registration, see v23f.hip).
std::string duplicate_variant(const std::vector<VariantEntry>& registry);
// "a, b,,c" -> {"a","b","c"}: comma-separated names, whitespace and empty items dropped.
std::vector<std::string> split_list(std::string_view comma_separated);

struct VariantRegistrar {
  explicit VariantRegistrar(VariantEntry e) { variant_registry().push_back(std::move(e)); }
};

}  // namespace harness

#define HARNESS_CONCAT_INNER(a, b) a##b
#define HARNESS_CONCAT(a, b) HARNESS_CONCAT_INNER(a, b)

// PROBLEM: problem name; CFG_T / ARGS_T: the problem's config and argument structs;
// READS: comma-separated input names in one string literal, e.g. "q,kv_fp8,kv_fp8_scale".
#define HARNESS_REGISTER_VARIANT(PROBLEM, CFG_T, ARGS_T, NAME, BACKEND, DESC, READS, WS_FN, LAUNCH_FN, FLAGS) \
  static ::harness::VariantRegistrar HARNESS_CONCAT(harness_variant_registrar_, __LINE__)(           \
      ::harness::VariantEntry{PROBLEM, NAME, DESC, BACKEND, ::harness::split_list(READS),              \
                              [](const void* c) -> std::size_t {                                        \
                                return WS_FN(*static_cast<const CFG_T*>(c));                            \
                              },                                                                        \
                              [](const void* a) { LAUNCH_FN(*static_cast<const ARGS_T*>(a)); },         \
                              __FILE__, FLAGS})
