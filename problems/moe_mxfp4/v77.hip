// v77 (session 20): v72 with the stages of both fp8 wgmma paths on per-slot mbarriers: the 32-row gate_up (v75) and
// the 64-row gate_up and down (v76). No proxy fence. Same products and order: v72's outputs.
#define MOE_GATE_UP_MBAR 1
#define MOE_WS30_MBAR 1
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#ifndef V77_NAME
#define V77_NAME "v77"
#define V77_DESC "v72 with the 32-row gate_up's and the 64-row path's stages on per-slot mbarriers"
#endif
MOE_MXFP4_VARIANT(V77_NAME, gpu, V77_DESC,
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
