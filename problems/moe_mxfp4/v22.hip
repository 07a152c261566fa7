// v22: v20 with its 32-row path (E 257 bs 512, E 33 bs 128: bs x k / routed experts in (8, 40]) on
// moe_wide22.h (Path32): one prologue launch (the route in block 0 beside the quantizer blocks) on both;
// at E 257 bs 512 (>= 1000 gate_up blocks) v20's gate_up at 4 k-blocks x 2 stages and 4 blocks/SM, and a
// down whose blocks run a tile's activations (copied once) against runs of 8 128-row weight slices in one
// continuous pipeline (4 k-blocks x 4 stages, 4 blocks/SM); at E 33 bs 128 v20's gate_up and down.
// Every other shape runs v20's code exactly as v20.hip launches it. Bit-identical to v20 (same products,
// k order and fp32 sums of every real column). Measured in docs/perf.md, section "moe_mxfp4 v22".
#include "problems/common/moe_rows8b.h"
#include "problems/common/moe_wgmma_rows.h"
#include "problems/common/moe_wide16n.h"
#include "problems/common/moe_wide22.h"

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
using R64G1 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's 64-row gate_up
using R64G2 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's down, K > 512
using R64G2S = moe_wgrows::Cfg<8, 2, 64, 4, 4, 1, 4, 2, true>;  // v14's down, K <= 512
#endif

size_t workspace_bytes(const MoeConfig& c) {
  switch (rows_for(c)) {
#if defined(MOE_WG8_HOST)
    case 8: return moe_rows8b::workspace8b(c);  // f16 activations + the chain's counters
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
    case 8:
      // v19's chain where measured (d_expert 256 with v16's persistent-down rule: E 257 bs 16 / 128).
      if (a.cfg.d_expert == 256 && moe_rows8b::supports8b<FG1, WG2>(a.cfg) &&
          int64_t(moe_pipeline::sizes_of(a.cfg, 8).tiles_max) * (a.cfg.d_hidden / WG2::BM) >=
              8 * int64_t(moe_rows8b::dyn_slots<WG2>(WG2::kPipeBytes)))
        moe_rows8b::launch8b<FG1, 4, WG2, 0, true>(a);  // 3 down blocks/SM, folded activation scales
      else
        moe_rows8::launch8<FG1, 4, WG2, 5, -1>(a);  // v16's chain (its own persistent-down rule)
      break;
    case 32:
      moe_wide22::Path32::launch(a);  // E 257 bs 512 / E 33 bs 128: moe_wide22.h's path
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

MOE_MXFP4_VARIANT("v22", gpu,
                  "v20 + 32-row path: one-launch quantize + route, down blocks over runs of weight slices with the "
                  "tile's activations copied once",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
