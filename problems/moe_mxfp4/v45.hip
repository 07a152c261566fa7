// v45 (session 13): v44 with the SwiGLU / requantization loop of gate_up's epilogue computing a thread's items a group
// at a time (MOE_REQ_GROUP: 5 of the 64-row tiles' 10 items a thread) before any of their stores, so that the items'
// dependency chains interleave (the loop ran at ~0.25 instructions a cycle and scheduler: latency-bound; docs/perf.md,
// section "moe_mxfp4 v45"). Same operations: v44's outputs. Builds without mma.sync (AMD) run v11's dispatch.
#define MOE_NEAR_BAND (1u << 12)
#define MOE_NEAR_MIN_STEP 0.02f
#define MOE_NEAR_MMA 4
#define MOE_NEAR_VALUES 1
#define MOE_REQ_GROUP 5
#define MOE_Y_BF16X2 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v45", gpu,
                  "v44 with the gate_up epilogue's requantization items computed five at a time before their stores",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
