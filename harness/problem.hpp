// What a problem declares: shapes with seeds, tolerance, inputs, the float64 oracle, a cost model,
// and how to hand its tensors to a variant.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/tensor.hpp"
#include "harness/variant_registry.hpp"

namespace harness {

struct ShapeCase {
  std::vector<std::pair<std::string, int64_t>> params;  // in the spec's column order
  uint64_t seed = 0;
  std::optional<double> official_reference_us;  // MI355X reference time, where the spec gives one
  int64_t get(const std::string& key) const;    // throws std::out_of_range naming the key
  std::string label() const;                    // e.g. "bs=4 kv=1024"
};

struct Tolerance {
  double rtol = 0, atol = 0;
  double max_mismatch_fraction = 0;  // elements allowed to fail (mla: 0.05; moe: 0)
};

struct Cost {
  double bytes = 0;  // bytes that must move for the formats the variant reads
  double flops = 0;
};

// Pointers to the input tensors by name (host pointers for cpu variants, device pointers for gpu).
using TensorPtrs = std::unordered_map<std::string, void*>;

class Problem {
 public:
  virtual ~Problem() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual std::vector<ShapeCase> test_shapes() const = 0;
  virtual std::vector<ShapeCase> benchmark_shapes() const = 0;
  // Why a shape given on the command line (`run --shape`) cannot run, in one line; "" if it can.
  // The spec's own shapes always can.
  virtual std::string shape_error(const ShapeCase& s) const { (void)s; return ""; }
  virtual Tolerance tolerance() const = 0;
  // The official input tuple (tensors only; the config travels in the args struct), in order.
  virtual std::vector<TensorSpec> input_specs(const ShapeCase& s) const = 0;
  virtual TensorSpec output_spec(const ShapeCase& s) const = 0;
  // Deterministic from (shape, seed), identical on every backend.
  virtual HostInputs generate(const ShapeCase& s, uint64_t seed) const = 0;
  // Float64 oracle, one value per output element (row-major, output_spec's shape).
  virtual std::vector<double> oracle(const ShapeCase& s, const HostInputs& in) const = 0;
  virtual Cost cost(const ShapeCase& s, const std::vector<std::string>& reads) const = 0;
  // Strict verdict: largest relative L2 error against the check reference that a variant reading
  // these formats may show (a kernel that skips work cannot hide under it).
  virtual double strict_rel_l2_limit(const std::vector<std::string>& reads) const = 0;
  virtual std::size_t workspace_bytes(const VariantEntry& v, const ShapeCase& s) const = 0;
  // Builds the problem's args struct from the pointers and calls v.launch.
  virtual void invoke(const VariantEntry& v, const ShapeCase& s, const TensorPtrs& inputs, void* out,
                      void* workspace, std::size_t workspace_bytes) const = 0;
};

std::vector<const Problem*>& problem_registry();
const Problem* find_problem(const std::string& name);

struct ProblemRegistrar {
  explicit ProblemRegistrar(const Problem* p) { problem_registry().push_back(p); }
};

}  // namespace harness

#define HARNESS_REGISTER_PROBLEM(TYPE) \
  static const TYPE HARNESS_CONCAT(harness_problem_, __LINE__);   \
  static ::harness::ProblemRegistrar HARNESS_CONCAT(harness_problem_registrar_, __LINE__)(&HARNESS_CONCAT(harness_problem_, __LINE__))
