// v60 (session 16): v54 with the 8-row gate_up's weight stages (E257 bs16 / bs128, E33 bs16) by bulk copies onto
// mbarriers under an L2 evict_first policy (moe_r8d's MOE_R8_BULKW 1): the cache flush costs those shapes 3.1-3.5 us
// (session 16 call 8), and evict_first weight lines replace each other instead of the flush's dirty lines (mla's KV
// lesson); cp.async's cache hint stops these kernels (ptxas). Same arithmetic as v54. docs/perf.md, "Session 16".
#ifndef MOE_R8_BULKW
#define MOE_R8_BULKW 1
#endif
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !defined(V60_BASE_ONLY)
MOE_MXFP4_VARIANT("v60", gpu, "v54 with the 8-row gate_up's weights by bulk copies, evict_first in L2",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
