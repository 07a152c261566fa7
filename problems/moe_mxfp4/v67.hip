// v67 (session 18, measurement): v54 with the 8-row gate_up at 4 stages and 5 blocks an SM (v54: 5 stages, 4
// blocks): call 2 of session 18 found its rate set by the warps an SM holds.
#define MOE_R8_PATH moe_r8d::Path<0, true, 4, 5>
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v67", gpu, "v54 with the 8-row gate_up at 4 stages, 5 blocks an SM",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
