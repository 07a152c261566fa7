// v75 (session 20): v72 with the 32-row gate_up's stages signalled per slot on mbarriers instead of a block barrier
// a stage (moe_fp8r::LoopMbar): each thread's copies arrive on the slot's "full" mbarrier as they land, each thread
// releases a slot on its "empty" mbarrier once its warp's wgmma groups of that stage retired, so the 8 warps no
// longer meet at every stage (sessions 16-19 found the 32- and 64-row loops paced by their stage protocol). No proxy
// fence (V75_MBAR 2: a fence.proxy.async after each wait, v75p). Same products and order: v72's outputs.
#ifndef V75_MBAR
#define V75_MBAR 1
#define V75_NAME "v75"
#define V75_DESC "v72 with the 32-row gate_up's stages on per-slot mbarriers (no block barrier a stage)"
#endif
#define MOE_GATE_UP_MBAR V75_MBAR
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT(V75_NAME, gpu, V75_DESC,
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
