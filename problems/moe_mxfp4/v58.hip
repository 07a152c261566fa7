// v58 (session 16): v54 with the 64-row down's weight copies under an L2 evict_first policy (moe_ws30::G160wEF), so
// that the y rows it writes stay in L2 for the combine (session 15's microbenchmark: combine 18.4 -> 15.8 us).
// Same arithmetic as v54. docs/perf.md, section "Session 16".
#ifndef V58_GATE_UP
#define V58_GATE_UP moe_ws30::G160w
#endif
#define V37_PATH64 moe_ws30::PathOf<V58_GATE_UP, moe_ws30::G160wEF>
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !defined(V58_BASE_ONLY)
MOE_MXFP4_VARIANT("v58", gpu, "v54 with the 64-row down's weight copies evict_first in L2",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
