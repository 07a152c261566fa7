// v27: v25 with the 32-row shapes (E 257 bs 512, E 33 bs 128) on moe_wide27.h's fp8 e4m3 wgmma path
// (small-N wgmma on 32- or 64-row tiles, moe_fp8r's weight decode; docs/perf-moe-wide3.md); every other
// shape exactly as v25 dispatches it (v21's 8-row path, v23's fp8 64-row path, v20's 64-row kernels).
// Builds without mma.sync (AMD) run v11's dispatch, as v25.
// v27f.hip (test only) includes this file with V27_PATH (the 32-row path) and V27_NO_REG defined.
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wgmma_rows.h"
#include "problems/common/moe_wide16n.h"
#include "problems/common/moe_wide22.h"
#include "problems/common/moe_fp8_rows.h"
#include "problems/common/moe_wide27.h"

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
using G27 = moe_wide27::Cfg<8, 2, 32, 4, 4, 2, true, 2>;  // gate_up: 8 warps x 2 groups, 4 k-blocks x 4 stages
using D27S = moe_wide27::Cfg<8, 2, 32, 4, 4, 2, true, 2>;  // down_slices
#ifndef V27_PATH
// E 257 bs 512: gate_up in one part, down_slices NS 4, prologue at 256 threads a token; E 33 bs 128: gate_up in
// 2 K-parts, down_slices NS 2, prologue at 1024 threads a token; down_slices a dependent launch on both
// (docs/perf-moe-wide3.md: measured as v27b in call 5).
#define V27_PATH                                                               \
  moe_wide27::PathOf<moe_wide27::Plan<G27, D27S, false, 1, 4, 0, 256, true>, \
                     moe_wide27::Plan<G27, D27S, false, 2, 2, 0, 1024, true>>
#endif
using Path27 = V27_PATH;
#endif

size_t workspace_bytes(const MoeConfig& c) {
#if defined(MOE_WG8_HOST)
  if (moe_fp8r::Path::applies(c)) return moe_fp8r::Path::workspace_bytes(c);
  if (Path27::applies(c)) return Path27::workspace_bytes(c);
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
  if (Path27::applies(a.cfg)) {
    Path27::launch(a);  // this variant's 32-row path
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

#ifndef V27_NO_REG  // measurement variants include this file and register themselves
MOE_MXFP4_VARIANT("v27", gpu, "v25 with the 32-row shapes on fp8 e4m3 wgmma with small N (moe_wide27.h)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  0);
#endif
