// v91c (session 26): v82 with the 8-row gate_up (E257 bs16 / bs128, E33 bs16) as a persistent grid of 4 blocks an SM
// (moe_r8d's PG), so that down_dyn's blocks start beside it and take finished tiles while gate_up computes the rest.
// Same products and order: outputs v82's bit for bit. Measurements: docs/perf.md, session 26.
#define MOE_R8D_PG 4
#define MOE_XR_NS 4
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE
MOE_MXFP4_VARIANT("v91c", gpu, "v82 with the 8-row gate_up as a persistent grid of 4 blocks an SM (the down starts beside it)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
