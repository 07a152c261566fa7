// v55b (measurement): v55 with eight pieces a thread (MOE_Y_COPY_UNROLL 8).
#define MOE_Y_COPY_UNROLL 8
#define V55_BASE_ONLY 1
#include "problems/moe_mxfp4/v55.hip"
MOE_MXFP4_VARIANT("v55b", gpu, "measurement: v55 with eight pieces a thread in the staged y copy-out",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
