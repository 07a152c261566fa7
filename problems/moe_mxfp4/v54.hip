// v54 (session 15): v52 with the 32-row down of the E33 bs128 plan writing y as v50 did (4-byte row pairs, no
// staging: MOE_Y_STAGED_PLAN1, moe_v37::G27Plan2), the staging kept for the E257 bs512 plan and the 64-row path: v51 / v52's
// staging measured -0.4..-1.1% on E257 bs512 and +0.6..+1.5% on E33 bs128. Same bytes as v52. docs/perf.md, section
// "moe_mxfp4 v51 / v52".
#define MOE_NEAR_BAND (1u << 12)
#define MOE_NEAR_MIN_STEP 0.02f
#define MOE_NEAR_MMA 4
#define MOE_NEAR_VALUES 1
#define MOE_REQ_GROUP 1
#define MOE_REQ_FAST 2
#define MOE_SPIN_ACQUIRE 1
#define MOE_QUANT_FAST 1
#define MOE_ROUTE_FAST 1
#define MOE_Y_BF16X2 1
#define MOE_Y_STAGED 1
#define MOE_DOWN_QUEUE 1
#define MOE_Y_STAGED_PLAN1 1
#ifndef V54_FORCE
#define V54_FORCE 0
#endif
#define V37_FORCE V54_FORCE  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
#if !V54_FORCE && !defined(V54_BASE_ONLY)  // V54_BASE_ONLY: a variant built on v54 registers itself
MOE_MXFP4_VARIANT("v54", gpu, "v52 with the E33 bs128 plan's 32-row down storing y without the staging",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
