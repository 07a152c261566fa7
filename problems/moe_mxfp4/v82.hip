// v82 (session 22): v81 with the 64-row path's down (E33 bs512 d_expert 512) loading each tile's activation rows once
// into shared memory (80 KB at 160 rows, K whole) and running MOE_XR_NS column blocks of 256 output rows a block, each
// its own weight-only mainloop (the next block's weights prefetched into L2) and v81's epilogue (moe_fp8r2::down_xr);
// v81's down, one block a column block, re-reads the tile's activations with every one (80 MB of L2 reads on E33
// bs512) and fills its pipeline from DRAM each time. The tiles whose gate_up blocks run past gate_up's first wave
// (E33 bs512: the last 3 of 36) finish last; their downs take one column block a block, the layer's end waits on them.
// d_expert 2048 (activations past shared memory) keeps v81's down.
// Same products, k order and epilogue: outputs v81's bit for bit. Measurements: docs/perf.md, session 22.
#define MOE_XR_NS 4
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
#if !V54_FORCE
MOE_MXFP4_VARIANT("v82", gpu,
                  "v81 with the 64-row down's activations resident in shared memory, several column blocks a block",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
