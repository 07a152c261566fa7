// v86f (test only): v86b (gate_up's K in two parts on every 64-row shape) with the exact fix-up forced (FORCE 1) on
// some weight rows, tokens and SwiGLU rows (as v82f): the parts' row flags meet as their union. Not for timing.
#define V54_FORCE 1
#define MOE_GU_SPLIT 2
#define MOE_GU_SPLIT_ALL true
#define V86_BASE_ONLY 1
#include "problems/moe_mxfp4/v86.hip"
MOE_MXFP4_VARIANT("v86f", gpu, "test only: v86b with the 32- and 64-row paths' exact fix-up forced",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
