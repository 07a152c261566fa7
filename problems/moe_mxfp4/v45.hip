// v45 (session 13): v44 with a cheaper first pass of gate_up's SwiGLU / requantization epilogue (docs/perf.md, section
// "moe_mxfp4 v45"): the loop rolled to one item a step (MOE_REQ_GROUP 1),
// SiLU with __expf / __fdividef and bf16 rounding by cvt (MOE_REQ_FAST: ~81 -> ~60 instructions a value, no division
// branch). The approximations stay far inside the band of the near-midpoint rule, whose listed values are still fully
// tested and recomputed with expf and IEEE division, so the stored values are v44's. Builds without mma.sync (AMD)
// run v11's dispatch.
#define MOE_NEAR_BAND (1u << 12)
#define MOE_NEAR_MIN_STEP 0.02f
#define MOE_NEAR_MMA 4
#define MOE_NEAR_VALUES 1
#define MOE_REQ_GROUP 1
#define MOE_REQ_FAST 1
#define MOE_Y_BF16X2 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
MOE_MXFP4_VARIANT("v45", gpu,
                  "v44 with gate_up's requantization loop rolled and its first pass on __expf, __fdividef and cvt bf16",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
