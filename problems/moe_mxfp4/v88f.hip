// v88f (test only): v88 with the exact fix-up forced (FORCE 1) on some weight rows, tokens and SwiGLU rows (as v82f).
// Not for timing.
#define V54_FORCE 1
#define V88_BASE_ONLY 1
#include "problems/moe_mxfp4/v88.hip"
MOE_MXFP4_VARIANT("v88f", gpu, "test only: v88 with the 32- and 64-row paths' exact fix-up forced",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
