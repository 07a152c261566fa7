// v58b (session 16, measurement): v58 with the 64-row gate_up's weight copies evict_first too.
#define V58_GATE_UP moe_ws30::G160wEF
#define V58_BASE_ONLY 1
#include "problems/moe_mxfp4/v58.hip"
MOE_MXFP4_VARIANT("v58b", gpu, "measurement: v58 with the 64-row gate_up's weight copies evict_first too",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
