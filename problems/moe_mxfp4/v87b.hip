// v87b (session 23, measurement): v87 without the next k-block's weight words read ahead on the 64-row path (PF off:
// 4 registers fewer; ptxas spills 24-52 B in v87's kernels, 24-52 B here too).
#define MOE_T176_PF false
#define V87_BASE_ONLY 1
#include "problems/moe_mxfp4/v87.hip"
MOE_MXFP4_VARIANT("v87b", gpu, "v87 without the 64-row path's weight words read a k-block ahead",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
