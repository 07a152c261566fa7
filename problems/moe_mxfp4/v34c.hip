// v34c (session 9; docs/perf.md, sections "moe_mxfp4 v34" and "Session 9, first integrator call"): v34 with each y
// value rounded to bf16 by one cvt.rn.bf16.f32 instead of numerics::f32_to_bf16's integer sequence (~10 instructions
// a store; ncu showed v34's 64-row down, one block an SM with its epilogue not overlapped, 18 us slower than v33's at
// E33 bs512). Same bits for every non-NaN value (both round to nearest even, subnormals kept): v34's outputs.
#define MOE_Y_BF16_CVT 1
#include "problems/moe_mxfp4/v34.hip"
MOE_MXFP4_VARIANT("v34c", gpu,
                  "v34 with the bf16 rounding of y as one cvt instruction (same bits, cheaper down epilogue)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
