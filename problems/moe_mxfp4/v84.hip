// v84 (session 22): v82 with the 32-row path's downs (E257 bs512, and E33 bs128's 64-row-tile plan) ordered tile-major
// with the late tiles apart (moe_w32::down_late): gate_up runs two blocks an SM there, so the tiles whose blocks lie
// past its first wave (E33 bs128: the last of 34; E257 bs512: a few of ~270) finish last; their downs take one
// 128-row slice a block instead of 4, and sit at the grid's end instead of in every column group, where they held
// slots spinning on their tiles. Same products and epilogue: outputs v82's bit for bit. Measurements: docs/perf.md,
// session 22.
#define MOE_W32_LATE true
#define V82_BASE_ONLY 1
#include "problems/moe_mxfp4/v82.hip"
MOE_MXFP4_VARIANT("v84", gpu, "v82 with the 32-row path's downs tile-major and the late tiles' downs one slice a block",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
