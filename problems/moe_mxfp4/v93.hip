// v93 (session 27): v82 with the 8-row gate_up (E257 bs16 / bs128, E33 bs16) at 6 stages and 3 blocks an SM (v82: 5 and
// 4; shared memory holds 4 blocks of 5 stages). Session 26's v91 found gate_up's rate following its resident blocks.
// Same products and order: outputs v82's bit for bit. Measurements: docs/perf.md, session 27.
#define MOE_R8D_ST 6
#define MOE_R8D_MINB 3
#define MOE_XR_NS 4
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE
MOE_MXFP4_VARIANT("v93", gpu, "v82 with the 8-row gate_up at 6 stages, 3 blocks an SM",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
