// v73f (test only): v73 with the exact fix-up forced (FORCE 1), as v54f: the fix-up reads x8 in v73's layout.
// Not for timing.
#define V73_FORCE 1
#include "problems/moe_mxfp4/v73.hip"
MOE_MXFP4_VARIANT("v73f", gpu, "test only: v73 with the 32- and 64-row paths' exact fix-up forced",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
