// v90g (session 26): v82 with the 64-row path's mainloop (gate_up only, E33 bs512 d_expert 512 / 2048) keeping three
// wgmma groups in flight while the next k-block decodes (four decoded A buffers instead of two) and its copies issued
// without a branch or predicate (moe_ws30::Cfg4). Same products and k order: outputs v82's bit for bit.
// Measurements: docs/perf.md, session 26.
#define MOE_WS30_NB4 1
#define MOE_XR_NS 4
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE
MOE_MXFP4_VARIANT("v90g", gpu,
                  "v82 with three wgmma groups in flight in the 64-row gate_up only (four decoded A buffers, branch-free copies)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
