// v52 (session 15): v51 with the 64-row down's blocks taking tiles in the order their gate_up blocks finish
// (MOE_DOWN_QUEUE: the tile's last gate_up block appends it to a queue; down block row y waits for the y-th entry)
// instead of in tile order: a block timeline of shape 5 (docs/patches/moe_chain_timeline.patch) showed ~50 SMs holding
// down blocks that waited for the shared expert's tiles, the slowest gate_up blocks. Same arithmetic and summation order
// as v51 (a tile's work does not depend on which block runs it). docs/perf.md, section "moe_mxfp4 v51 / v52".
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
#ifndef V52_FORCE
#define V52_FORCE 0
#endif
#define V37_FORCE V52_FORCE  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
#if !V52_FORCE
MOE_MXFP4_VARIANT("v52", gpu, "v51 with the 64-row down taking tiles in gate_up's completion order",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
