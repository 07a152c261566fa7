// v83 (session 22): v82 with the 64-row path's gate_up blocks past its last full wave split into MOE_GU_SPLIT K-parts
// (moe_fp8r2::gate_up_sk): E33 bs512 has 144 gate_up blocks at one an SM, so 12 of them ran ~95 us as a second wave
// after the other 132 and held the layer's end (their tiles' downs wait for them); as 24 half-K blocks they finish
// in about half that. The parts' accumulators meet in the workspace and the last part to arrive sums them in part
// order (fp32: the sum differs from v82's in rounding only) and runs the epilogue. Measurements: docs/perf.md,
// session 22.
#define MOE_GU_SPLIT 2
#define V82_BASE_ONLY 1
#include "problems/moe_mxfp4/v82.hip"
#if !V54_FORCE
MOE_MXFP4_VARIANT("v83", gpu, "v82 with the 64-row gate_up's blocks past its last full wave split into K-parts",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
