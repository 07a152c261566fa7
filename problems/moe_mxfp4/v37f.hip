// v37f (test only): v37's 32- and 64-row paths with the exact fix-up forced (FORCE 1) on some weight rows, tokens and
// SwiGLU rows, so the fix-up's bf16 y stores are checked too (as v30f / v31f for fp32 y). Not for timing.
#define V37_FORCE 1
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v37f", gpu,
                  "test only: v37 with the 32- and 64-row paths' exact fix-up forced (bf16 y stores included)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
