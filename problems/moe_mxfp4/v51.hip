// v51 (session 15): v50 with the 64-row down's weighted y rows staged in shared memory (MOE_Y_STAGED,
// moe_tiled::store_weighted_rows_staged): the same bf16 words, written to y one whole 512-byte column a warp in 16-byte
// stores instead of 4-byte row pairs scattered over 8 y rows a store. A block timeline of shape 5 (v50t) put the down's
// y stores at 30% of its run time. docs/perf.md, section "moe_mxfp4 v51". Builds without mma.sync (AMD) run v11's
// dispatch.
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
#ifndef V51_FORCE
#define V51_FORCE 0
#endif
#define V37_FORCE V51_FORCE  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
#if !V51_FORCE
MOE_MXFP4_VARIANT("v51", gpu, "v50 with the 64-row down's y rows staged in shared memory (16-byte column stores)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
