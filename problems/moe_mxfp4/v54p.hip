// v54p (measurement only, session 17): v54 with MOE_PRO_STATS: the combine prints, for one call in 8, when the 64-row
// path's prologue blocks (quantizer, route) end and when gate_up's blocks leave their dependent wait. Not a candidate.
#define MOE_PRO_STATS 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v54p", gpu, "v54 with prologue / gate_up start stamps (measurement)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
