// v50 (session 14): v48 with the fp8 prologues' hidden-state quantizer computing each stored e4m3 byte from the value
// directly (MOE_QUANT_FAST; moe_fp8r::token_scales / numerics::e2m1_value_ties_away) instead of through e2m1 codes: the
// same bytes for every finite input at about a third of the instructions; the prologue (one launch before gate_up,
// ~11-12 us at bs 512) was ALU-bound on them. docs/perf.md, section "moe_mxfp4 v50". Builds without mma.sync (AMD) run
// v11's dispatch.
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
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v50", gpu,
                  "v48 with the prologue's hidden-state quantizer storing e4m3 bytes without e2m1 codes",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
