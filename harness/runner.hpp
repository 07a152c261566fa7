// The pipeline, written once against Device: generate -> poison -> run -> check -> time, per shape.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/device.hpp"
#include "harness/problem.hpp"
#include "harness/results.hpp"
#include "harness/stats.hpp"

namespace harness {

struct RunOptions {
  Mode mode = Mode::test;
  std::optional<ShapeSet> shape_set;        // default: the mode's own (default_shape_set)
  std::vector<ShapeCase> custom_shapes;     // `--shape`: when given, the run's set is custom
  std::vector<int> shape_indices;           // into that shape list; empty = all
  std::optional<uint64_t> seed;             // replaces every shape's seed
  std::optional<uint64_t> secret_seed;      // Cantor-paired with each shape seed
  TimingOptions timing;
  bool flush_bytes_given = false;           // otherwise the cpu device uses a cache-sized flush
  bool oracle = false;                      // check against the float64 oracle even on a GPU build
  std::optional<StopRule> stop_rule;        // default: the mode's caps (tests shorten it)
  std::string inputs_dir;                   // load <dir>/<tensor>.bin instead of generating (one shape)
  int fresh = 0;                            // test mode: checked calls on fresh inputs after each shape's own
};

// The files --inputs reads for a shape, and what is wrong with them ("" if nothing): one line.
std::string check_input_files(const Problem& p, const ShapeCase& s, const std::string& dir);

using ProgressFn = std::function<void(const std::string&)>;

// The shape list of a set (the spec's lists; empty for custom), and the set (and list) a run with these
// options draws from.
std::vector<ShapeCase> set_shapes(const Problem& p, ShapeSet s);
ShapeSet run_shape_set(const RunOptions& o);
std::vector<ShapeCase> run_shapes(const Problem& p, const RunOptions& o);

// The problem's GPU reference variant (flag kVariantReference), or nullptr.
const VariantEntry* find_reference_variant(const std::string& problem);

// Bytes of the guard region placed after the output and the workspace.
constexpr std::size_t kGuardBytes = 4096;
constexpr uint8_t kGuardByte = 0xA5;
constexpr uint8_t kPoisonByte = 0xFF;  // bf16 / f32 NaN

// Runs every selected shape; a failing shape is recorded and the next one runs.
RunResult run_variant(Device& dev, const Problem& p, const VariantEntry& v, const RunOptions& o,
                      const ProgressFn& progress = {});

}  // namespace harness
