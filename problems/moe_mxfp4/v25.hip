// v25: the session-6 paths in one variant: v21's 8-row path (moe_rows8w.h: E 257 bs 16 / 128, E 33 bs 16), v22's
// 32-row path (moe_wide22.h: E 257 bs 512, E 33 bs 128) and v23's fp8 e4m3 wgmma path (moe_fp8_rows.h,
// moe_fp8r::Path: E 33 bs 512 at d_expert 512 and 2048), each exactly as v21.hip / v22.hip / v23.hip launch
// them (docs/perf.md, sections "moe_mxfp4 v21", "moe_mxfp4 v22" and "moe_mxfp4 v23"); 64-row shapes the fp8
// path does not support run v20's. The 256-row tile form (moe_fp8r::PathT, run as v25t in session 6's
// final call) was slower; its variant was removed.
// Builds without mma.sync (AMD) run v11's dispatch, as v20.
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wgmma_rows.h"
#include "problems/common/moe_wide16n.h"
#include "problems/common/moe_wide22.h"
#include "problems/common/moe_fp8_rows.h"

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
// v20's options (docs/perf.md, section "moe_mxfp4 v20").
using FG1 = moe_wg8::F16Cfg<8, 4>;             // v15's 8-row gate_up
using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;       // v15's 8-row down
using R64G1 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's 64-row gate_up
using R64G2 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's down, K > 512
using R64G2S = moe_wgrows::Cfg<8, 2, 64, 4, 4, 1, 4, 2, true>;  // v14's down, K <= 512
using Rows8 = moe_rows8w::Rows8Path;
#endif

size_t workspace_bytes(const MoeConfig& c) {
#if defined(MOE_WG8_HOST)
  if (moe_fp8r::Path::applies(c)) return moe_fp8r::Path::workspace_bytes(c);
#endif
  switch (rows_for(c)) {
#if defined(MOE_WG8_HOST)
    case 8: return Rows8::applies(c) ? Rows8::workspace_bytes(c) : moe_rows8b::workspace8b(c);
#else
    case 8: return moe_pipeline::carve(c, 8, nullptr, nullptr, ScaledDecode::kActBytes);
#endif
    case 32: return moe_pipeline::carve(c, 32, nullptr, nullptr, Bf16Folded::kActBytes);
    default: return moe_pipeline::carve(c, 64, nullptr, nullptr, Bf16Folded::kActBytes);
  }
}

void launch(const MoeArgs& a) {
#if defined(MOE_WG8_HOST)
  if (moe_fp8r::Path::applies(a.cfg)) {
    moe_fp8r::Path::launch(a);
    return;
  }
  switch (rows_for(a.cfg)) {
    case 8:
      if (Rows8::applies(a.cfg))
        Rows8::launch(a);
      else if (a.cfg.d_expert == 256 && moe_rows8b::supports8b<FG1, WG2>(a.cfg) &&
               int64_t(moe_pipeline::sizes_of(a.cfg, 8).tiles_max) * (a.cfg.d_hidden / WG2::BM) >=
                   8 * int64_t(moe_rows8b::dyn_slots<WG2>(WG2::kPipeBytes)))
        moe_rows8b::launch8b<FG1, 4, WG2, 0, true>(a);  // v20: v19's chain
      else
        moe_rows8::launch8<FG1, 4, WG2, 5, -1>(a);  // v20: v16's chain (e.g. the d_expert 1024 test shape)
      break;
    case 32:
      moe_wide22::Path32::launch(a);  // v22's 32-row path
      break;
    default:
      if (a.cfg.d_expert <= 512) moe_wgrows::launch<64, R64G1, R64G2S>(a);
      else moe_wgrows::launch<64, R64G1, R64G2>(a);
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

MOE_MXFP4_VARIANT("v25", gpu, "v21's 8-row path + v22's 32-row path + v23's fp8 e4m3 wgmma path on the 64-row shapes",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  0);
