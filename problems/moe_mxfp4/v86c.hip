// v86c (session 23, measurement): v86 with gate_up's K in four parts on E33 bs512 (576 quarter-K blocks: the last wave
// 48 blocks of a quarter of the time).
#define MOE_GU_SPLIT 4
#define MOE_GU_SPLIT_ALL false
#define V86_BASE_ONLY 1
#include "problems/moe_mxfp4/v86.hip"
MOE_MXFP4_VARIANT("v86c", gpu, "v86 with gate_up's K in four parts on E33 bs512",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
