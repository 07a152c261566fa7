// v86b (session 23, measurement): v86 with gate_up's K split in two on d_expert 2048 as well (576 gate_up blocks, 4.4
// waves, as 1152 half-K blocks).
#define MOE_GU_SPLIT 2
#define MOE_GU_SPLIT_ALL true
#define V86_BASE_ONLY 1
#include "problems/moe_mxfp4/v86.hip"
MOE_MXFP4_VARIANT("v86b", gpu, "v86 with gate_up's K in two parts on d_expert 2048 as well",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
