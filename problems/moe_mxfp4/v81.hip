// v81 (session 20): v72 with E33 bs128's 32-row plan on tiles of up to 64 rows (moe_v37::G64: 8 warps of one 16-row
// group, 128 weight rows a block, wgmma N 32 / 48 / 64, gate_up in one K-part; its down G64Down likewise, 4 slices a
// block), so that each routed expert's ~32 +- 6 pairs take one tile and its weights are decoded once instead of twice
// for about half of them (~35 tiles instead of ~52). The products are v72's; the fp32 sums differ from v72's in
// rounding only (v72 adds its gate_up's two K-part partials). Measured: docs/perf.md, session 20, calls 7-10 (forms with
// 2 K-parts, 2 / 8 down slices a block or 3 gate_up blocks an SM were slower).
#define MOE_FEW64 1
#define MOE_DOWN_ZERO_PAD 1
#define V54_BASE_ONLY 1
#include "problems/moe_mxfp4/v54.hip"
MOE_MXFP4_VARIANT("v81", gpu, "v72 with E33 bs128's plan on 64-row tiles (each expert's weights decoded once)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
