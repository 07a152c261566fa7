// v90n (session 26, diagnostic): v90m with moe_ws30::Cfg4 (NB 4, branch-free copies): NB 2 against 4 without spills.
// Measurements: docs/perf.md, session 26.
#define MOE_WS30_NB4 4
#define MOE_XR_NS 4
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE
MOE_MXFP4_VARIANT("v90n", gpu,
                  "diagnostic: v82 with the 64-row gate_up at 128 weight rows a block, NB 4",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
