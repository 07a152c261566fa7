// moe_dispatch: the host-side dispatch shared by v25 and the moe variants composed after it. A variant names one
// path per tile-row class (8 rows: bs x k / n_routed <= 8; 32 rows: <= 40; 64 rows: above), each a struct with
// applies / workspace_bytes / launch; the 64-row path is asked first. A shape its named path does not take runs
// v20's kernels for its class (v22's path for the 32-row class), so every shape runs (docs/perf.md, sections
// "moe_mxfp4 v20" to "v25").
// Host code only: it selects kernels and changes none. Builds without mma.sync (AMD) run v11's dispatch.
#pragma once
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wgmma_rows.h"
#include "problems/common/moe_wide16n.h"
#include "problems/common/moe_wide22.h"
#include "problems/common/moe_fp8_rows.h"

namespace moe_dispatch {
namespace {

inline int rows_for(const MoeConfig& c) {
#if defined(MOE_HAVE_MMA_SYNC)
  const int pe = c.bs * c.n_experts_per_token / c.n_routed_experts;
  return pe <= 8 ? 8 : pe <= 40 ? 32 : 64;
#else
  const int r = moe_tiled::tile_rows_for(c);
  return r == 16 ? 32 : r;
#endif
}

#if defined(MOE_WG8_HOST)
// v20's configurations (docs/perf.md, section "moe_mxfp4 v20").
using FG1 = moe_wg8::F16Cfg<8, 4>;                              // v15's 8-row gate_up
using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;                        // v15's 8-row down
using R64G1 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's 64-row gate_up
using R64G2 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's down, K > 512
using R64G2S = moe_wgrows::Cfg<8, 2, 64, 4, 4, 1, 4, 2, true>;  // v14's down, K <= 512

// v25's paths (the 32-row one also the 32-row class's fallback).
using Rows8 = moe_rows8w::Rows8Path;  // v21
using Rows32 = moe_wide22::Path32;    // v22
using Rows64 = moe_fp8r::Path;        // v23

inline void launch_v20_rows8(const MoeArgs& a) {
  if (a.cfg.d_expert == 256 && moe_rows8b::supports8b<FG1, WG2>(a.cfg) &&
      int64_t(moe_pipeline::sizes_of(a.cfg, 8).tiles_max) * (a.cfg.d_hidden / WG2::BM) >=
          8 * int64_t(moe_rows8b::dyn_slots<WG2>(WG2::kPipeBytes)))
    moe_rows8b::launch8b<FG1, 4, WG2, 0, true>(a);  // v19's chain
  else
    moe_rows8::launch8<FG1, 4, WG2, 5, -1>(a);  // v16's chain (e.g. the d_expert 1024 test shape)
}

inline void launch_v20_rows64(const MoeArgs& a) {
  if (a.cfg.d_expert <= 512) moe_wgrows::launch<64, R64G1, R64G2S>(a);
  else moe_wgrows::launch<64, R64G1, R64G2>(a);
}
#endif

template <class P8, class P32, class P64>
struct Dispatch {
  static size_t workspace_bytes(const MoeConfig& c) {
#if defined(MOE_WG8_HOST)
    if (P64::applies(c)) return P64::workspace_bytes(c);
    switch (rows_for(c)) {
      case 8: return P8::applies(c) ? P8::workspace_bytes(c) : moe_rows8b::workspace8b(c);
      case 32: return P32::applies(c) ? P32::workspace_bytes(c) : Rows32::workspace_bytes(c);
      default: return moe_pipeline::carve(c, 64, nullptr, nullptr, moe_tile::Bf16Folded::kActBytes);
    }
#else
    switch (rows_for(c)) {
      case 8: return moe_pipeline::carve(c, 8, nullptr, nullptr, moe_tile::ScaledDecode::kActBytes);
      case 32: return moe_pipeline::carve(c, 32, nullptr, nullptr, moe_tile::Bf16Folded::kActBytes);
      default: return moe_pipeline::carve(c, 64, nullptr, nullptr, moe_tile::Bf16Folded::kActBytes);
    }
#endif
  }

  static void launch(const MoeArgs& a) {
#if defined(MOE_WG8_HOST)
    if (P64::applies(a.cfg)) return P64::launch(a);
    switch (rows_for(a.cfg)) {
      case 8: return P8::applies(a.cfg) ? P8::launch(a) : launch_v20_rows8(a);
      case 32: return P32::applies(a.cfg) ? P32::launch(a) : Rows32::launch(a);
      default: return launch_v20_rows64(a);
    }
#else
    switch (rows_for(a.cfg)) {
      case 8: moe_tiled::launch_one<8, moe_tiled::Plan, moe_tile::ScaledDecode>(a); break;
      case 32: moe_tiled::launch_one<32, moe_tiled::PlanWide, moe_tile::Bf16Folded>(a); break;
      default: moe_tiled::launch_one<64, moe_tiled::PlanWide, moe_tile::Bf16Folded>(a); break;
    }
#endif
  }
};

#if defined(MOE_WG8_HOST)
using V25 = Dispatch<Rows8, Rows32, Rows64>;
#endif

}  // namespace
}  // namespace moe_dispatch
