// v36f (test only): v36 with the exact fix-up forced (FORCE 1) on some tokens, weight rows and SwiGLU rows of the
// 32-row shapes (moe_w36::PathForced).
#define V36_PATH moe_w36::PathForced
#include "problems/moe_mxfp4/v36.hip"
MOE_MXFP4_VARIANT("v36f", gpu, "test only: v36 with the fix-up forced (moe_w36.h)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
