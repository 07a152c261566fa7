// v38 (session 9, helper moe-y16x2): v37 with the bf16 y of the 32- and 64-row (wgmma) down epilogues written as 4-byte
// pairs of adjacent rows (MOE_Y_BF16X2: moe_tiled::store_weighted_row_pairs; lanes lane and lane ^ 4 swap one
// column's values, cvt.rn.bf16x2 of the same fp32 products) instead of one 2-byte store a value. The same bits as
// v37 (docs/perf.md, section "moe_mxfp4 v38"). The 8-row paths and the fix-up stores keep their scalar stores.
// Builds without mma.sync (AMD) run v11's dispatch.
#define MOE_Y_BF16X2 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v38", gpu,
                  "v37 with the wgmma paths' bf16 y stored as 4-byte pairs of adjacent rows (lane ^ 4 swap, "
                  "cvt.rn.bf16x2; same bits)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
