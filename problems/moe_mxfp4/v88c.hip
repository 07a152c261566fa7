// v88c (session 23, measurement): v88 with 7 column blocks a down_xr block (E33 bs512: the 33 first-wave tiles' downs
// as 132 blocks of 7, the 3 late tiles' one column block a block as before).
#define MOE_XR_NS 7
#define V88_BASE_ONLY 1
#include "problems/moe_mxfp4/v88.hip"
MOE_MXFP4_VARIANT("v88c", gpu, "v88 with 7 column blocks a down block",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
