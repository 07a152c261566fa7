// v89f (test only): v89 with the exact fix-up forced (FORCE 1) on some weight rows, tokens and SwiGLU rows (as v82f).
// Not for timing.
#define V54_FORCE 1
#define V89_BASE_ONLY 1
#include "problems/moe_mxfp4/v89.hip"
MOE_MXFP4_VARIANT("v89f", gpu, "test only: v89 with the 32- and 64-row paths' exact fix-up forced",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
