// v76 (session 20): v72 with the 64-row path's gate_up and down (moe_ws30::G160w) signalling their stages per slot on
// mbarriers instead of a block barrier a stage (moe_fp8r::LoopMbar, as v75 does for the 32-row gate_up): session 16's
// ncu put 23% of the 64-row loop's samples at its stage boundary (cp.async wait, proxy fence, barrier). No proxy
// fence (V76_MBAR 2: a fence.proxy.async after each wait, v76p). Same products and order: v72's outputs.
#ifndef V76_MBAR
#define V76_MBAR 1
#define V76_NAME "v76"
#define V76_DESC "v72 with the 64-row path's stages on per-slot mbarriers (no block barrier a stage)"
#endif
#define MOE_WS30_MBAR V76_MBAR
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT(V76_NAME, gpu, V76_DESC,
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
