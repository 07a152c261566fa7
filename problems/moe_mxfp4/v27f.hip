// v27f (test only): v27's kernels with the exact fix-up forced (FORCE 1) on some tokens, weight rows and SwiGLU
// rows (down_slices not dependent, prologue at 1024 threads a token: the form run in calls 4 and 5). Not for timing.
#define V27_PATH moe_wide27::PathOf<moe_wide27::Plan<G27, D27S, false, 1, 4, 1>, moe_wide27::Plan<G27, D27S, false, 2, 2, 1>>
#define V27_NO_REG 1
#include "problems/moe_mxfp4/v27.hip"
MOE_MXFP4_VARIANT("v27f", gpu, "test only: v27 with the fix-up forced",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  0);
