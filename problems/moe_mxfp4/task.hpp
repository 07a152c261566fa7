// moe_mxfp4 problem helpers shared by the Problem (task.cpp), the GPU generator and the tests.
#pragma once
#include <cstdint>
#include <vector>

#include "harness/problem.hpp"
#include "problems/moe_mxfp4/moe_api.h"

namespace moe_task {

inline int64_t pad_to(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Shape parameters: d_hidden, d_expert, n_routed, k, bs (one shared expert).
harness::ShapeCase make_shape(int64_t d_hidden, int64_t d_expert, int64_t n_routed, int64_t k, int64_t bs,
                              uint64_t seed);
MoeConfig config_of(const harness::ShapeCase& s);
inline int64_t num_experts(const MoeConfig& c) { return c.n_routed_experts + c.n_shared_experts; }

// The eleven official input tensors, in order.
std::vector<harness::TensorSpec> input_specs(const MoeConfig& c);
harness::TensorSpec output_spec(const MoeConfig& c);

// Builds the variant arguments from tensors found by name (host or device pointers alike).
MoeArgs make_args(const MoeConfig& c, const harness::TensorPtrs& in, void* out, void* workspace,
                  std::size_t workspace_bytes);
harness::TensorPtrs pointers_of(harness::HostInputs& in);

// Host generator (multi-threaded), bit-identical to the GPU generator.
harness::HostInputs generate_host(const MoeConfig& c, uint64_t seed);

// Expected number of distinct experts touched under uniform routing (roofline.md).
double expected_touched_experts(const MoeConfig& c);

}  // namespace moe_task
