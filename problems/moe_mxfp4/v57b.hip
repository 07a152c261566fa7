// v57b (session 16, measurement): v57 with the 64-row down at 16 warps of one 16-row group too.
#define V57_DOWN moe_ws30::Cfg<16, 1, 4, 4, true, 160>
#define V57_BASE_ONLY 1
#include "problems/moe_mxfp4/v57.hip"
MOE_MXFP4_VARIANT("v57b", gpu, "measurement: v57 with the 64-row down at 16 warps of one 16-row group too",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
