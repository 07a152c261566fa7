// v40b (helper moe-r8e): v40 with the down at 3 blocks/SM's 168 registers (launch bounds) instead of 160 (__maxnreg__):
// v38 with only the routing-structure bound on the 8-row gate_up grid.
#define V40_PATH moe_r8e::Path<false, true, 0>
#include "problems/moe_mxfp4/v40.hip"
MOE_MXFP4_VARIANT("v40b", gpu, "v40 with the down's registers as v38's (168): only the gate_up grid bound changes",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
