// v41 (session 10, helper moe-y8): v38 with the bf16 y of the 32- and 64-row (wgmma) down epilogues written as 8-byte
// groups of 4 adjacent rows (MOE_Y_BF16X4: moe_tiled::store_weighted_row_quads) instead of v38's 4-byte row pairs.
// Each lane rounds its 4 products weight[c] * acc by cvt.rn.bf16x2 (the same fp32 products and rounding as v38), then
// the 4 lanes of rows 4q..4q+3 exchange words (lane ^ 8: the row half, lane ^ 4: the column) so that every lane holds
// 4 adjacent rows of one (column, row half): one 8-byte store per (m, j) instead of two 4-byte ones, with the same
// 2 shuffles per (m, j) as v38. The same bits as v38 (docs/perf-moe-y8.md). The 8-row paths and the fix-up stores
// keep their scalar stores. Builds without mma.sync (AMD) run v11's dispatch.
#define MOE_Y_BF16X2 1
#define MOE_Y_BF16X4 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v41", gpu,
                  "v38 with the wgmma paths' bf16 y stored as 8-byte groups of 4 adjacent rows (lane ^ 4 / lane ^ 8 "
                  "word exchange after cvt.rn.bf16x2; same bits)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
