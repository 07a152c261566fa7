// v86 (session 23): v82 with gate_up's K split in two on E33 bs512 d_expert 512 (moe_fp8r2::gate_up_sk): 144 gate_up
// blocks of ~95 us on 132 SMs made a second wave of 12 (the layer's end waited on them and their tiles' downs); as 288
// half-K blocks the last wave is 24 blocks of half the time. The two parts of a (tile, column block) pair meet in the
// workspace: the first to finish stores its fp32 sums (161 KB), the second adds them in part order (the same sums
// whichever finishes first) and runs v82's epilogue. Elsewhere v82's kernels. Measurements: docs/perf.md, session 23.
#define MOE_XR_NS 4
#ifndef MOE_GU_SPLIT  // v86b / v86c.hip set their own and register themselves (V86_BASE_ONLY)
#define MOE_GU_SPLIT 2
#define MOE_GU_SPLIT_ALL false
#endif
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#ifndef V54_FORCE
#define V54_FORCE 0
#endif
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE && !defined(V86_BASE_ONLY)
MOE_MXFP4_VARIANT("v86", gpu,
                  "v82 with gate_up's K in two parts on E33 bs512 (no second gate_up wave of 12 whole blocks)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
