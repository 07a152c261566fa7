// v57 (session 16): v54 with the 64-row path (E33 bs512 at d_expert 512 / 2048) at 16 warps of one 16-row group
// each: 256 weight rows a block and tiles of up to 160 rows as v54, 4 warps a scheduler instead of 2 (128 registers
// a thread); down as v54 (8 warps of two groups). docs/perf.md, section "Session 16".
#ifndef V57_GATE_UP
#define V57_GATE_UP moe_ws30::Cfg<16, 1, 4, 4, true, 160>
#endif
#ifndef V57_DOWN
#define V57_DOWN moe_ws30::G160w
#endif
#ifndef V57_FORCE
#define V57_FORCE 0
#endif
#define V37_PATH64 moe_ws30::PathOf<V57_GATE_UP, V57_DOWN>
#define V37_PATH64F moe_ws30::PathOf<V57_GATE_UP, V57_DOWN, V57_FORCE>
#define V54_FORCE V57_FORCE
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !defined(V57_BASE_ONLY) && !V57_FORCE
MOE_MXFP4_VARIANT("v57", gpu, "v54 with the 64-row gate_up at 16 warps of one 16-row group (4 warps a scheduler)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
