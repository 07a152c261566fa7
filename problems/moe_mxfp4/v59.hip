// v59 (session 16): v54 with every weight copy of the 8-, 32- and 64-row paths under an L2 evict_first policy
// (MOE_W_EF: moe_tile::cp_async_w, moe_wide27's and moe_fp8r's EF configurations). The weights are read once a call,
// so their lines should leave L2 first: fewer of the cache flush's dirty lines written back while they stream in (the
// flush costs the 8-row shapes ~3.1-3.5 us: `--hot` against the official timing, session 16 call 8), and the y rows stay
// for the combine. The policy is a constant (ptxas 13.x drops a createpolicy whose only users are cp.async cache hints,
// which is why sessions 7 and 16 saw an illegal instruction). Same arithmetic as v54. docs/perf.md, section "Session 16".
#ifndef MOE_W_EF
#define MOE_W_EF 7
#endif
#ifndef V59_FORCE
#define V59_FORCE 0
#endif
#define V54_FORCE V59_FORCE
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V59_FORCE && !defined(V59_BASE_ONLY)
MOE_MXFP4_VARIANT("v59", gpu, "v54 with every weight copy evict_first in L2 (a constant policy)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
