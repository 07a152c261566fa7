// v25t: v25 with v23t's 256-row tile candidate on the 64-row shapes (moe_fp8r::PathT; measured first in
// session 6's final call: docs/perf.md).
#define MOE_V25_FP8 PathT
#define MOE_V25_SKIP_REG
#include "problems/moe_mxfp4/v25.hip"
MOE_MXFP4_VARIANT("v25t", gpu, "v25 with v23t's tiles of up to 256 rows split evenly per expert (candidate)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  0);
