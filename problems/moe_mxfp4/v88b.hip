// v88b (session 23, measurement): v88 with the 3-stage ring's copies two stages ahead (a wgmma drain at each stage
// barrier, as moe_fp8r's default copy distance).
#define MOE_XR_APART 2
#define V88_BASE_ONLY 1
#include "problems/moe_mxfp4/v88.hip"
MOE_MXFP4_VARIANT("v88b", gpu, "v88 with the down's copies two stages ahead",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
