// v64 (session 18, measurement): v54 with the 8-row chain's gate_up persistent, 3 blocks an SM walking the
// tiles (moe_r8d's PG), so that the down's first blocks are resident beside it from the start (one an SM).
#define MOE_R8_PG 3
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v64", gpu, "v54 with the 8-row gate_up persistent at 3 blocks an SM",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
