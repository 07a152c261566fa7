// v88 (session 23): v82 with the 64-row down's (down_xr, E33 bs512 d_expert 512) next column block's first stages
// issued before the current column block's epilogue: a 3-stage ring (copies one stage ahead) apart from the staged y
// tile (51 + 83 + 80 KB with the resident activations), so the stages land while the y tile is written and stored
// (v82: the staging reuses the ring, so each column block's mainloop started from an empty pipeline). Same products, k
// order and epilogue: outputs v82's bit for bit. Measurements: docs/perf.md, session 23.
#ifndef MOE_XR_APART  // v88b.hip: copies two stages ahead (with the drain at each stage barrier)
#define MOE_XR_APART 1
#endif
#ifndef MOE_XR_NS  // v88c.hip: 7 column blocks a block
#define MOE_XR_NS 4
#endif
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#ifndef V54_FORCE
#define V54_FORCE 0
#endif
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE && !defined(V88_BASE_ONLY)
MOE_MXFP4_VARIANT("v88", gpu,
                  "v82 with the 64-row down's next column block's first stages landing during the current epilogue",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
