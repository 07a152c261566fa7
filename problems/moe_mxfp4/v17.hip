// v17 (LOST to v16, kept for reference; v16 stays the best variant): v16 with the 8-row gate_up as an
// mbarrier producer / consumer pipeline (problems/common/moe_mbar8.h: one producer warp issuing v16's
// 16-byte cp.async per stage, tracked by cp.async.mbarrier.arrive.noinc on a full barrier per slot,
// 4 consumer warps computing exactly as moe_wg8::gate_up_f16 and arriving on an empty barrier after
// the stage's MMAs; waits with a suspend-time hint; 5 stages, 3 blocks/SM). Bit-identical to v13/v16.
// Measured (docs/perf-moe-v17.md, H200): E257 bs16 127.3 vs v16 125.4 us, E257 bs128 281.3 vs 277.0,
// E33 bs16 90.7 vs 91.3. The 32- and 64-row tiles run exactly as v16 dispatches them; builds without
// mma.sync (AMD) run v11's dispatch, as v13-v16.
#include "problems/common/moe_mbar8.h"
#include "problems/common/moe_wgmma_rows.h"

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
using FG1 = moe_mbar8::Cfg<5>;  // mbarrier gate_up, 5 stages
using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;       // v15's 8-row down
using W32G1 = moe_wide16::Cfg<4, 2, 4, 8, 2>;  // v13's 32-row kernels
using W32G2 = moe_wide16::Cfg<4, 2, 4, 4, 3>;
using R64G1 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's 64-row gate_up
using R64G2 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's down, K > 512
using R64G2S = moe_wgrows::Cfg<8, 2, 64, 4, 4, 1, 4, 2, true>;  // v14's down, K <= 512
#endif

size_t workspace_bytes(const MoeConfig& c) {
  switch (rows_for(c)) {
#if defined(MOE_WG8_HOST)
    case 8: return moe_rows8::workspace8(c);  // f16 activations, combine counters
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
    case 8: moe_mbar8::launch8m<FG1, 3, WG2, 0, false, 1000000>(a); break;
    case 32: moe_wide16::launch<32, W32G1, W32G2>(a); break;
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

MOE_MXFP4_VARIANT("v17", gpu,
                  "LOST to v16 (+1.5% E257): v16 with an mbarrier producer/consumer 8-row gate_up (producer warp, cp.async, 5 stages, 3 blocks/SM; bit-identical)",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
