// v87 (session 23): v82 with the 64-row path's tiles of up to 176 sorted rows (wgmma N 176 where a tile has more than
// 160): on E33 bs512 (d_expert 512 and 2048) the shared expert's 512 pairs make 3 tiles instead of 4 of 128, so 35
// tiles instead of 36 (gate_up and down blocks -2.8%); a block's time is set by its weight decode, which the 176-row
// tiles do once for 171 rows instead of 128. Routed experts (105-151 pairs) keep one tile each at N 160. The last
// activation copy of a stage is partial (176 x 8 chunks over 256 threads). Measurements: docs/perf.md, session 23.
#define MOE_T176 1
#ifndef MOE_T176_PF  // v87b.hip: without the next k-block's weight words read ahead (fewer registers)
#define MOE_T176_PF true
#endif
#define MOE_XR_NS 4
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#ifndef V54_FORCE
#define V54_FORCE 0
#endif
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE && !defined(V87_BASE_ONLY)
MOE_MXFP4_VARIANT("v87", gpu, "v82 with the 64-row path's tiles of up to 176 rows (wgmma N 176)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
