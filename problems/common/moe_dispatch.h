// moe_dispatch: the host-side dispatch shared by v20 and the moe variants built on it. A variant names one path per
// tile-row class (8 rows: bs x k / n_routed <= 8; 32 rows: <= 40; 64 rows: above), each a struct with applies /
// workspace_bytes / launch that takes every shape of its class: a new path is chained before the one it replaces
// with Or<New, Old>, and v20's paths (V20Rows8 / 32 / 64) take whatever is left (docs/perf.md, sections
// "moe_mxfp4 v20" onwards). Host code only: it selects kernels and changes none. Builds without mma.sync (AMD) run
// v11's dispatch.
#pragma once
#include "problems/common/moe_rows8b.h"
#include "problems/common/moe_wgmma_rows.h"
#include "problems/common/moe_wide16n.h"

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
// P where it applies, Q otherwise.
template <class P, class Q>
struct Or {
  static bool applies(const MoeConfig& c) { return P::applies(c) || Q::applies(c); }
  static size_t workspace_bytes(const MoeConfig& c) {
    return P::applies(c) ? P::workspace_bytes(c) : Q::workspace_bytes(c);
  }
  static void launch(const MoeArgs& a) {
    if (P::applies(a.cfg)) P::launch(a);
    else Q::launch(a);
  }
};

// v20's paths (docs/perf.md, section "moe_mxfp4 v20"); each takes every shape of its class. Templates, so that a
// variant that does not use one instantiates none of its kernels.
template <int = 0>
struct V20Rows8T {
  using FG1 = moe_wg8::F16Cfg<8, 4>;        // v15's 8-row gate_up
  using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;  // v15's 8-row down
  static bool applies(const MoeConfig&) { return true; }
  static size_t workspace_bytes(const MoeConfig& c) { return moe_rows8b::workspace8b(c); }
  static void launch(const MoeArgs& a) {
    // v19's chain where measured (d_expert 256 with v16's persistent-down rule: E 257 bs 16 / 128).
    if (a.cfg.d_expert == 256 && moe_rows8b::supports8b<FG1, WG2>(a.cfg) &&
        int64_t(moe_pipeline::sizes_of(a.cfg, 8).tiles_max) * (a.cfg.d_hidden / WG2::BM) >=
            8 * int64_t(moe_rows8b::dyn_slots<WG2>(WG2::kPipeBytes)))
      moe_rows8b::launch8b<FG1, 4, WG2, 0, true>(a);  // 3 down blocks/SM, folded activation scales
    else
      moe_rows8::launch8<FG1, 4, WG2, 5, -1>(a);  // v16's chain (its own persistent-down rule)
  }
};
using V20Rows8 = V20Rows8T<>;

// The 32-row tiles' options as measured: at least 2 column groups, 3 groups kept as 3 (not rounded to 4), reverse
// tile order, gate_up and combine as dependents (mode 5).
template <int = 0>
struct V20Rows32T {
  using G1 = moe_wide16::Cfg<4, 2, 4, 8, 2>;  // full tile: 4 column groups
  using G2 = moe_wide16::Cfg<4, 2, 4, 4, 3>;
  static bool applies(const MoeConfig&) { return true; }
  static size_t workspace_bytes(const MoeConfig& c) {
    return moe_pipeline::carve(c, 32, nullptr, nullptr, moe_tile::Bf16Folded::kActBytes);
  }
  static void launch(const MoeArgs& a) { moe_wide16n::launch<32, G1, G2, 2, true, true, 5>(a); }
};
using V20Rows32 = V20Rows32T<>;

template <int = 0>
struct V20Rows64T {
  using G1 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's 64-row gate_up
  using G2 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's down, K > 512
  using G2S = moe_wgrows::Cfg<8, 2, 64, 4, 4, 1, 4, 2, true>;  // v14's down, K <= 512
  static bool applies(const MoeConfig&) { return true; }
  static size_t workspace_bytes(const MoeConfig& c) {
    return moe_pipeline::carve(c, 64, nullptr, nullptr, moe_tile::Bf16Folded::kActBytes);
  }
  static void launch(const MoeArgs& a) {
    if (a.cfg.d_expert <= 512) moe_wgrows::launch<64, G1, G2S>(a);
    else moe_wgrows::launch<64, G1, G2>(a);
  }
};
using V20Rows64 = V20Rows64T<>;
#endif

template <class P8, class P32, class P64>
struct Dispatch {
  static size_t workspace_bytes(const MoeConfig& c) {
    switch (rows_for(c)) {
#if defined(MOE_WG8_HOST)
      case 8: return P8::workspace_bytes(c);
      case 32: return P32::workspace_bytes(c);
      default: return P64::workspace_bytes(c);
#else
      case 8: return moe_pipeline::carve(c, 8, nullptr, nullptr, moe_tile::ScaledDecode::kActBytes);
      case 32: return moe_pipeline::carve(c, 32, nullptr, nullptr, moe_tile::Bf16Folded::kActBytes);
      default: return moe_pipeline::carve(c, 64, nullptr, nullptr, moe_tile::Bf16Folded::kActBytes);
#endif
    }
  }

  static void launch(const MoeArgs& a) {
    switch (rows_for(a.cfg)) {
#if defined(MOE_WG8_HOST)
      case 8: P8::launch(a); break;
      case 32: P32::launch(a); break;
      default: P64::launch(a); break;
#else
      case 8: moe_tiled::launch_one<8, moe_tiled::Plan, moe_tile::ScaledDecode>(a); break;
      case 32: moe_tiled::launch_one<32, moe_tiled::PlanWide, moe_tile::Bf16Folded>(a); break;
      default: moe_tiled::launch_one<64, moe_tiled::PlanWide, moe_tile::Bf16Folded>(a); break;
#endif
    }
  }
};

}  // namespace
}  // namespace moe_dispatch
