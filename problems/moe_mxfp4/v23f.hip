// v23f (test only): v23 with the exact fix-up of moe_fp8_rows.h forced on some weight rows, tokens and
// SwiGLU rows (FORCE = 1), to check that path on the 64-row shapes. Not for timing.
#define FP8_FORCE 1
#include "problems/moe_mxfp4/v23.hip"
MOE_MXFP4_VARIANT("v23f", gpu,
                  "test only: v23 with the fp8 path's exact fix-up forced on some weight rows, tokens and SwiGLU rows",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
