// v28: v25 (v21's 8-row path, v22's 32-row path, v23's fp8 e4m3 wgmma path) with moe_fp8_rows2.h's form of the
// fp8 path (moe_fp8r2::Path: tiles of up to 160 rows split evenly per expert, down overlapping gate_up's last
// wave, quantizer + route in one launch, dependent launches) where v25 runs moe_fp8r::Path (the 64-row shapes,
// E33 bs512 at d_expert 512 / 2048); every other shape is dispatched exactly as v25. Measured in
// docs/perf-moe-fp8b.md. Builds without mma.sync (AMD) run v11's dispatch, as v25.
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wgmma_rows.h"
#include "problems/common/moe_wide16n.h"
#include "problems/common/moe_wide22.h"
#include "problems/common/moe_fp8_rows.h"
#include "problems/common/moe_fp8_rows2.h"

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

template <class P>
size_t workspace_of(const MoeConfig& c) {
#if defined(MOE_WG8_HOST)
  if (P::applies(c)) return P::workspace_bytes(c);
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

template <class P>
void launch_with(const MoeArgs& a) {
#if defined(MOE_WG8_HOST)
  if (P::applies(a.cfg)) {
    P::launch(a);
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

#if defined(MOE_WG8_HOST)
#if defined(V28_PATH)
using Path28 = V28_PATH;
#else
using Path28 = moe_fp8r2::Path;
#endif
#else
using Path28 = void;
#endif
size_t workspace_bytes(const MoeConfig& c) { return workspace_of<Path28>(c); }
void launch(const MoeArgs& a) { launch_with<Path28>(a); }
}  // namespace

#if !defined(V28_PATH)  // v28f.hip includes this file with another path and registers itself
MOE_MXFP4_VARIANT("v28", gpu, "v25 with moe_fp8_rows2.h's fp8 path on E33 bs512: 160-row tiles split evenly per expert, down overlapping gate_up's last wave, one prologue launch",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  0);
#endif
