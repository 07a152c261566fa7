// v60b (session 16, measurement): v60's bulk weight copies without the L2 policy (MOE_R8_BULKW 2).
#define MOE_R8_BULKW 2
#define V60_BASE_ONLY 1
#include "problems/moe_mxfp4/v60.hip"
MOE_MXFP4_VARIANT("v60b", gpu, "measurement: v60 without the evict_first policy",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
