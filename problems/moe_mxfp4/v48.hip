// v48 (session 13): v46 with the down blocks of the 32- and 64-row paths waiting for their tile's gate_up count by
// acquire loads alone (MOE_SPIN_ACQUIRE; moe_wg8::ld_acquire_gpu): the 64-row down polled with an atomic read-modify-
// write and then ran a sequentially consistent fence (MEMBAR.SC.GPU + L1 invalidation), the 32-row down the same fence
// after its acquire poll; every down block pays the wait once (~13 a SM on shape 5). docs/perf.md, section "moe_mxfp4
// v45". Builds without mma.sync (AMD) run v11's dispatch.
#define MOE_NEAR_BAND (1u << 12)
#define MOE_NEAR_MIN_STEP 0.02f
#define MOE_NEAR_MMA 4
#define MOE_NEAR_VALUES 1
#define MOE_REQ_GROUP 1
#define MOE_REQ_FAST 2
#define MOE_SPIN_ACQUIRE 1
#define MOE_Y_BF16X2 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v48", gpu,
                  "v46 with the down blocks waiting for their tile by acquire loads alone (no fence after the poll)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
