// v62 (session 17): v54 with the 32-row path's route block lean (MOE_ROUTE_LEAN, moe_tiled::route_block_lean): it
// stores -1 only into each expert's padding rows instead of resetting every row of the sorted list and the row flags;
// the quantizer blocks of the same launch clear the flags. On E257 bs512 the route block ended ~2.5-3 us after the
// quantizer (docs/perf.md, session 17, calls 4-6). Same kernels and sums otherwise: v54's outputs.
#define MOE_ROUTE_LEAN 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v62", gpu, "v54 with the 32-row route block storing only the padding rows' -1 (lean route)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
