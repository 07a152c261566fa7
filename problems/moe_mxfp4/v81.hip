// v81 (session 20): v72 with E33 bs128's 32-row plan on tiles of up to 64 rows (moe_v37::G64: 8 warps of one 16-row
// group, wgmma N 32 / 48 / 64; its down likewise), so that each routed expert's ~32 +- 6 pairs take one tile and its
// weights are decoded once instead of twice for about half of them (~35 tiles instead of ~52). Gate_up in 2 K-parts
// (v81b: 1). Same products and k order as v72 a tile; rows grouped into other tiles, so the fp32 sums are v72's.
#ifndef MOE_FEW64
#define MOE_FEW64 2
#define V81_NAME "v81"
#define V81_DESC "v72 with E33 bs128's plan on 64-row tiles (each expert's weights decoded once)"
#endif
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT(V81_NAME, gpu, V81_DESC,
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
