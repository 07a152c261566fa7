// v18: v16 with the 32-row tiles (E 257 bs 512, E 33 bs 128) on f16 mma.sync with v12's cheaper f16 weight
// decode (problems/common/moe_wide_f16.h: weight scale folded by one f16x2 multiply, activations f16 with
// their scale folded, a per-stage bf16 fallback outside the exact f16 range). V18_64: 0 = the 64-row tiles
// on v14's bf16 wgmma kernels (as v16); 1 = v14's bf16 gate_up mainloop with an f16 epilogue and the f16
// wgmma down (moe_wgmma_f16.h) for d_expert <= 512; 2 = both 64-row stages on f16 wgmma
// (moe_wgmma_f16.h; slower than v16 on the H200, docs/perf-moe-f16w.md). The 8-row chain is v16's.
// Builds without mma.sync (AMD) run v11's dispatch, as v13-v16.
// Measured on the H200 (docs/perf-moe-f16w.md): no gain over v16 (309.1 vs 309.1 us geomean in the same
// call; E257 bs512 +2.2%, the rest within noise); bit-identical to the reference like v16.
#include "problems/common/moe_rows8.h"
#include "problems/common/moe_wide_f16.h"

#ifndef V18_64
#define V18_64 1
#endif
#ifndef V18_FORCE
#define V18_FORCE 0
#endif
#ifndef V18_PF  // moe_wgf16::Cfg's PF and GK for the f16 64-row kernels (candidates)
#define V18_PF true
#endif
#ifndef V18_GK
#define V18_GK 1
#endif

namespace {
using moe_tile::Bf16Folded;
using moe_tile::ScaledDecode;

int rows_for(const MoeConfig& c) {
#if defined(MOE_HAVE_MMA_SYNC)
  const int pe = c.bs * c.n_experts_per_token / c.n_routed_experts;
  return pe <= 8 ? 8 : pe <= 40 ? 32 : 64;
#else
  const int r = moe_tiled::tile_rows_for(c);
  return r == 16 ? 32 : r;
#endif
}

#if defined(MOE_WG8_HOST)
using FG1 = moe_wg8::F16Cfg<8, 4>;             // v15's 8-row gate_up
using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;       // v15's 8-row down
using F32G1 = moe_widef16::Cfg<4, 2, 4, 8, 2, 1, V18_FORCE>;  // v13's 32-row shapes, f16
using F32G2 = moe_widef16::Cfg<4, 2, 4, 4, 3, 1, V18_FORCE>;
using R64G1 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's 64-row gate_up
using R64G2 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's down, K > 512
using R64G2S = moe_wgrows::Cfg<8, 2, 64, 4, 4, 1, 4, 2, true>;  // v14's down, K <= 512
using F64G1 = moe_wgf16::Cfg<8, 2, 64, 8, 3, 1, 4, 2, V18_FORCE, V18_PF, V18_GK>;   // v14's shapes on f16
using F64G2 = moe_wgf16::Cfg<8, 2, 64, 8, 3, 1, 4, 2, V18_FORCE, V18_PF, V18_GK>;
using F64G2S = moe_wgf16::Cfg<8, 2, 64, 4, 4, 1, 4, 2, V18_FORCE, V18_PF, V18_GK>;
#endif

size_t workspace_bytes(const MoeConfig& c) {
  switch (rows_for(c)) {
#if defined(MOE_WG8_HOST)
    case 8: return moe_rows8::workspace8(c);  // f16 activations
#else
    case 8: return moe_pipeline::carve(c, 8, nullptr, nullptr, ScaledDecode::kActBytes);
#endif
    case 32: return moe_pipeline::carve(c, 32, nullptr, nullptr, Bf16Folded::kActBytes);
    default: return moe_pipeline::carve(c, 64, nullptr, nullptr, Bf16Folded::kActBytes);
  }
}

void launch(const MoeArgs& a) {
#if defined(MOE_WG8_HOST)
  switch (rows_for(a.cfg)) {
    case 8: moe_rows8::launch8<FG1, 4, WG2, 5, -1>(a); break;
    case 32: moe_widef16::launch<32, F32G1, F32G2>(a); break;
    default:
      if constexpr (V18_64 == 2) {
        if (a.cfg.d_expert <= 512) moe_wgf16::launch<64, F64G1, F64G2S>(a);
        else moe_wgf16::launch<64, F64G1, F64G2>(a);
      } else if (V18_64 == 1 && a.cfg.d_expert <= 512) {
        moe_wgf16::launch_bf16_gate<64, R64G1, F64G2S>(a);
      } else {
        if (a.cfg.d_expert <= 512) moe_wgrows::launch<64, R64G1, R64G2S>(a);
        else moe_wgrows::launch<64, R64G1, R64G2>(a);
      }
      break;
  }
#else
  switch (rows_for(a.cfg)) {
    case 8: moe_tiled::launch_one<8, moe_tiled::Plan, ScaledDecode>(a); break;
    case 32: moe_tiled::launch_one<32, moe_tiled::PlanWide, Bf16Folded>(a); break;
    default: moe_tiled::launch_one<64, moe_tiled::PlanWide, Bf16Folded>(a); break;
  }
#endif
}
}  // namespace

#ifndef V18_NAME
#define V18_NAME "v18"
#define V18_DESC "v16 with the 32-row tiles on f16 mma.sync (v12's f16 weight decode, scales folded; bf16 fallback stage) and the d_expert <= 512 64-row down on f16 wgmma; no gain over v16"
#endif
MOE_MXFP4_VARIANT(V18_NAME, gpu, V18_DESC,
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
