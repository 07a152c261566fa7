// v38f (test only): v38's 32- and 64-row paths with the exact fix-up forced (FORCE 1) on some weight rows, tokens and
// SwiGLU rows, so the fix-up's bf16 y stores after the paired stores are checked too (as v37f). Not for timing.
#define MOE_Y_BF16X2 1
#define V37_FORCE 1
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v38f", gpu,
                  "test only: v38 with the 32- and 64-row paths' exact fix-up forced (bf16 y stores included)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
