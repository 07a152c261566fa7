// v59c (session 16, measurement): v59 without the 8-row chain's part (MOE_W_EF 6: the 32- and 64-row paths' weight
// copies evict_first only).
#define MOE_W_EF 6
#define V59_BASE_ONLY 1
#include "problems/moe_mxfp4/v59.hip"
MOE_MXFP4_VARIANT("v59c", gpu, "measurement: v59 on the 32- and 64-row paths only",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
