// v43 (session 12): v42 with the listed values' exact dot products on the tensor unit (MOE_NEAR_MMA:
// moe_fp8r::near_dots_mma; a warp step takes one value's gate and up rows over 8 x 4 k-blocks, a k-block's two sums on
// the diagonals of an f16 m16n8k16 mma.sync with fp32 accumulation) instead of fp32 fma chains with a decode a
// product. The same exact block sums (docs/perf.md, section "moe_mxfp4 v43"). Builds without mma.sync (AMD) run v11's
// dispatch.
#define MOE_NEAR_BAND (1u << 12)
#define MOE_NEAR_MIN_STEP 0.02f
#define MOE_NEAR_MMA 4
#define MOE_Y_BF16X2 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v43", gpu,
                  "v42 with the listed values' exact dot products on f16 mma.sync (8 on an mma's diagonal)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
