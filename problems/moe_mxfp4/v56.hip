// v56 (session 16, measurement): v54 with the 64-row path's gate_up and down at 16 warps of one 16-row group each
// (4 warps a scheduler instead of 2; 256 weight rows a block as before) on tiles of up to 128 rows.
#ifndef V56_CFG
#define V56_CFG moe_ws30::Cfg<16, 1, 4, 4, true, 128>
#endif
#define V37_PATH64 moe_ws30::PathOf<V56_CFG, V56_CFG>
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v56", gpu, "measurement: v54 with the 64-row path at 16 warps of one 16-row group, 128-row tiles",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
