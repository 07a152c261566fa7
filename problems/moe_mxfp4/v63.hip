// v63 (session 18, measurement): v54 with E257 bs512 (16 rows an expert) on the 8-row chain (moe_r8d::Path<>)
// instead of the 32-row wgmma path: each expert's weights decoded by ~2.5 8-row tiles instead of one 32-row tile.
#define MOE_R8_UPTO 16
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v63", gpu, "v54 with 16 rows an expert (E257 bs512) on the 8-row chain",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
