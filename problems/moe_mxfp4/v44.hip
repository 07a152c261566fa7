// v44 (session 12): v43 with the first pass listing candidate values one by one instead of items (MOE_NEAR_VALUES), so
// that the full test after it (flip_step and the routing weight) takes one value a thread rather than an item's values
// in a row, over ~80 threads, while the block waits at the barrier (docs/perf.md, section "moe_mxfp4 v44"). Builds
// without mma.sync (AMD) run v11's dispatch.
#define MOE_NEAR_BAND (1u << 12)
#define MOE_NEAR_MIN_STEP 0.02f
#define MOE_NEAR_MMA 4
#define MOE_NEAR_VALUES 1
#define MOE_Y_BF16X2 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v44", gpu,
                  "v43 with the requantization's candidates listed and tested one value a thread",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
