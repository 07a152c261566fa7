// v23t: v23 with moe_fp8_rows.h's candidate configuration (G1t / G2t: tiles of up to 256 rows split
// evenly per expert, 128 x up-to-256 blocks, wgmma N by the tile's rows). NOT measured: written after
// the last device call of its session (docs/perf.md, section "moe_mxfp4 v23"); measure (test + benchmark) before use.
#define FP8_G1 G1t
#define FP8_G2 G2t
#define FP8_SKIP_REG
#include "problems/moe_mxfp4/v23.hip"
MOE_MXFP4_VARIANT("v23t", gpu,
                  "v23 with tiles of up to 256 rows split evenly per expert (candidate, not measured)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  0);
