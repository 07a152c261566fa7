// v38m (test only): v38 with the exact fix-up forced as v38f, except that the SwiGLU rows chosen are forced in one
// 32-value block in three only (FORCE 2): such a row holds folded and unfolded blocks side by side, the form a row
// takes when one of its blocks leaves the e4m3 window on real data, and the down's fix-up must scale each block by
// its own form (moe_fp8r::exact_dot_a). Not for timing.
#define MOE_Y_BF16X2 1
#define V37_FORCE 2
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v38m", gpu,
                  "test only: v38 with the fix-up forced on SwiGLU rows that mix folded and unfolded blocks",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
