// v42 (session 11): v38 with the SwiGLU values whose MXFP4 requantization an inexact g / u could change recomputed
// exactly (MOE_NEAR_BAND: moe_fp8r::swiglu_requant_near in the 32- and 64-row fp8 gate_ups). The fp8 wgmma's sums
// are not exact, the reference's fp32 sums of these products are; a value within 2^-12..2^-11 (relative) of the bf16
// midpoint below an e2m1 or block-scale boundary whose flip would move its row's output by 0.02 x W_down or more is
// recomputed from the exact dot products, and its block requantized again (docs/perf.md, section "moe_mxfp4 v42").
// Builds without mma.sync (AMD) run v11's dispatch.
#define MOE_NEAR_BAND (1u << 12)
#define MOE_NEAR_MIN_STEP 0.02f
#define MOE_Y_BF16X2 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v42", gpu,
                  "v38 with the SwiGLU values near a deciding bf16 midpoint recomputed exactly (fresh-input "
                  "requantization flips of the fp8 sums)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
