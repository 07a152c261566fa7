// v90m (session 26, diagnostic): v82 with the 64-row gate_up on one 16-row group a warp (128 weight rows a block), NB 2.
// Measurements: docs/perf.md, session 26.
#define MOE_WS30_NB4 3
#define MOE_XR_NS 4
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE
MOE_MXFP4_VARIANT("v90m", gpu,
                  "diagnostic: v82 with the 64-row gate_up at 128 weight rows a block, NB 2",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
