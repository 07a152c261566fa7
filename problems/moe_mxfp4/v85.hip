// v85 (session 22, measurement): v82 with the 64-row path's tiles in route_even's own order, so that the shared
// expert's four 128-row tiles come last: three of them are then the tiles past gate_up's first wave on E33 bs512 (and
// the fifth wave's on d_expert 2048) instead of three routed experts' 105-151-row tiles. Same products: outputs v82's.
#define MOE_TILES_FORWARD 1
#define V82_BASE_ONLY 1
#include "problems/moe_mxfp4/v82.hip"
MOE_MXFP4_VARIANT("v85", gpu, "v82 with the 64-row path's tiles in route order (the shared expert's last)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
