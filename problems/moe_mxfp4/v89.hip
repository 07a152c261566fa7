// v89 (session 23): v82 with the 64-row down's (down_xr, E33 bs512 d_expert 512) grid holding only the blocks that
// run: a 1-D grid, slot-major (the 2-D grid's launch order), ceil(28 / 4) = 7 blocks for each of the first late_from
// slots and 28 for the rest, instead of 28 x tiles_max blocks of which 3 in 4 of the first slots' leave at once (~700
// on E33 bs512, each briefly holding an SM). Same blocks' work: outputs v82's bit for bit.
#define MOE_XR_COMPACT 1
#define MOE_XR_NS 4
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#ifndef V54_FORCE
#define V54_FORCE 0
#endif
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE && !defined(V89_BASE_ONLY)
MOE_MXFP4_VARIANT("v89", gpu, "v82 with the 64-row down's grid holding only the blocks that run",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
