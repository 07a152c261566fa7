// v19: v16 with the 257-expert 8-row shapes (E 257 bs 16 / 128) on moe_rows8b.h's chain: the gate_up -> down
// edge overlapped per tile (gate_up blocks signal a per-tile counter; a dependent down takes work items from a
// queue, its item fetch spread over the stages of an earlier item, and copies an item's activations once its
// tile's count is complete), so down work fills gate_up's tail; the activation scales folded into the f16
// activations where exact (one check a gate_up block). Every other shape runs v16's code unchanged (E 33 bs 16
// on v16's 8-row chain, 32- and 64-row tiles). Bit-identical to v16 (same products and k order; the folded
// per-k-block products are the unfolded ones x 2^s exactly). Builds without mma.sync (AMD) run v11's dispatch.
#include "problems/common/moe_rows8b.h"
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
using FG1 = moe_wg8::F16Cfg<8, 4>;             // v15's 8-row gate_up
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
      // v16's rule for its persistent down (>= 8 work items a resident block: E 257) picks the new chain.
      if (moe_rows8b::supports8b<FG1, WG2>(a.cfg) &&
          int64_t(moe_pipeline::sizes_of(a.cfg, 8).tiles_max) * (a.cfg.d_hidden / WG2::BM) >=
              8 * int64_t(moe_rows8b::dyn_slots<WG2>(WG2::kPipeBytes)))
        moe_rows8b::launch8b<FG1, 4, WG2, 0, true>(a);  // 3 down blocks/SM, folded activation scales
      else
        moe_rows8::launch8<FG1, 4, WG2, 5, -1>(a);  // E 33 bs 16: v16's chain with v13's down
      break;
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

MOE_MXFP4_VARIANT("v19", gpu,
                  "v16 + E257 8-row chain: per-tile gate_up->down overlap (counters, queued down), folded act. scales",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
