// v79 (session 20): v72 with the stages of both fp8 wgmma paths (the 32-row gate_up, the 64-row gate_up and down) on
// per-slot mbarriers in a form the PTX memory model supports (moe_fp8r::LoopMbar 3): the weights by bulk copies (async
// proxy writes, read by generic loads once "full" completes), the activations and scales by cp.async published by
// each writer one stage ahead (its own copies waited for and fenced with fence.proxy.async when they are the only
// ones in flight). v75 / v76's form (no fence) gained 1-2% on the 64-row path; with the consumer's fence (v76p) the
// gain was gone. Same products and order: v72's outputs.
#ifndef V79_GATE_UP_MBAR
#define V79_GATE_UP_MBAR 3
#define V79_NAME "v79"
#define V79_DESC "v72 with both fp8 wgmma paths' stages on per-slot mbarriers: bulk weight copies, activations published by their writers"
#endif
#if V79_GATE_UP_MBAR
#define MOE_GATE_UP_MBAR V79_GATE_UP_MBAR
#endif
#define MOE_WS30_MBAR 3
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT(V79_NAME, gpu, V79_DESC,
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
