// v15: v13 with the 8-row tiles (E 257 bs 16 / 128, E 33 bs 16) on problems/common/moe_rows8.h: route +
// quantize in one prologue kernel; gate_up and combine launched as programmatic dependent launches (their
// blocks become resident while the previous kernel drains and wait with griddepcontrol.wait); down as a
// persistent kernel over (tile, 256-row slice) items with one copy pipeline across items where the grid
// holds >= 8 items per resident block (E 257), else v13's down grid (E 33 bs 16, where it measured
// faster). Same arithmetic and k order as v13: bit-identical output. 32/64-row tiles: v13's code paths.
// Builds without mma.sync (AMD) run v11's dispatch, as v13. Measured on the H200: docs/perf.md, section "moe_mxfp4 v15".
#include "problems/common/moe_rows8.h"
#include "problems/common/moe_wide16.h"

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
using FG1 = moe_wg8::F16Cfg<8, 4>;  // gate_up: 64 rows x 8 f16 mma.sync, 8 k-blocks a stage, 4 stages
using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;  // down: 256 rows x 8, 4 k-blocks a stage, 3 stages, 3 blocks/SM
// Block shapes on the wide16 mainloop (v12: 32-row gate_up 3 stages; 64-row down 8 k-blocks a stage, 1 block/SM).
using W32G1 = moe_wide16::Cfg<4, 2, 4, 8, 2>;  // 128 x 32, 8 k-blocks a stage, 2 stages (70 KB: 3 blocks/SM)
using W32G2 = moe_wide16::Cfg<4, 2, 4, 4, 3>;  // 128 x 32, 4 k-blocks a stage
using W64G1 = moe_wide16::Cfg<8, 2, 8, 8, 3>;     // 256 x 64, 8 warps, 8 k-blocks a stage, 3 stages (210 KB)
using W64G2 = moe_wide16::Cfg<8, 2, 8, 4, 3, 2>;  // 256 x 64, 4 k-blocks a stage, 3 stages, 2 blocks/SM (111 KB)
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
    case 32: moe_wide16::launch<32, W32G1, W32G2>(a); break;
    default: moe_wide16::launch<64, W64G1, W64G2>(a); break;
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

MOE_MXFP4_VARIANT("v15", gpu,
                  "v13 + 8-row tiles as an overlapped chain (moe_rows8.h): route and quantize fused, gate_up / combine as dependent "
                  "launches, persistent down over (tile, slice) items on E 257 (bit-identical)",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
