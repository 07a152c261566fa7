// v46 (session 13): v45 with fewer instructions in the first pass of gate_up's epilogue (MOE_REQ_FAST 2; docs/perf.md,
// section "moe_mxfp4 v45"): ex2 / rcp.approx.ftz without __expf's and __fdividef's range handling, e2m1 codes without
// the NaN test (the pass's values are finite), a block's nonzero test from its amax instead of two shuffles, and the
// pass's near-rule flag known at compile time (one loop body instead of two). The stored values are v45's. Builds
// without mma.sync (AMD) run v11's dispatch.
#define MOE_NEAR_BAND (1u << 12)
#define MOE_NEAR_MIN_STEP 0.02f
#define MOE_NEAR_MMA 4
#define MOE_NEAR_VALUES 1
#define MOE_REQ_GROUP 1
#define MOE_REQ_FAST 2
#define MOE_Y_BF16X2 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v46", gpu,
                  "v45 with the first pass on ex2 / rcp.approx.ftz, no NaN test and the nonzero test from the block amax",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
