// Float64 oracle of the official a4w4 MoE (moe_mxfp4.md): the activation quantizations and the bf16
// rounding of the SwiGLU output are applied bit-exactly; only accumulation is in double.
#pragma once
#include <vector>

#include "problems/moe_mxfp4/moe_api.h"

namespace moe_task {

// Reads hidden_states, raw weights + scales and the routing from host pointers in `a`; returns
// [bs, d_hidden] unrounded values.
std::vector<double> oracle(const MoeArgs& a);

}  // namespace moe_task
