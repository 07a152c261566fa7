// v56c (session 16, measurement): v54 with the 64-row path's v54's 64-row configuration on 128-row tiles.
#define V37_PATH64 moe_ws30::PathOf<moe_ws30::Cfg<8, 2, 4, 4, true, 128>, moe_ws30::Cfg<8, 2, 4, 4, true, 128>>
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v56c", gpu, "measurement: v54 with the 64-row path's v54's 64-row configuration on 128-row tiles",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
