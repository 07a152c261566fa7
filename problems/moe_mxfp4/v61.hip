// v61 (session 16): v54 with the 8-row gate_up's weight copies (gate_up_r8d: E257 bs16 / bs128, E33 bs16) under an
// L2 evict_first policy (MOE_W_EF 1), the policy passed as a kernel parameter: the cache flush costs those shapes
// 3.1-3.5 us, and evict_first weight lines replace each other instead of the flush's dirty lines. The down's copies
// stay plain: ptxas 13.0 puts their policy in an odd uniform register (an illegal instruction; compute-sanitizer and
// the SASS, session 16 call 13). Same arithmetic as v54. docs/perf.md, section "Session 16".
#ifndef MOE_W_EF
#define MOE_W_EF 1
#endif
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !defined(V61_BASE_ONLY)
MOE_MXFP4_VARIANT("v61", gpu, "v54 with the 8-row gate_up's weight copies evict_first in L2",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
