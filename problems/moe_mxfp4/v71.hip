// v71 (session 18, measurement): v54 with E257 bs512 and E33 bs128 (16 / 32 rows an expert) on the 64-row path (moe_ws30: tiles of up
// to 160 rows, so an expert's weights are decoded once instead of once per 32-row tile).
#define MOE_R64_FROM 12
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v71", gpu, "v54 with E257 bs512 and E33 bs128 (16 / 32 rows an expert) on the 64-row path",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
