// v13: v12 with the 32- and 64-row tiles (E 257 bs 512, E 33 bs 128 / 512, d 2048) on
// problems/common/moe_wide16.h: the same bf16-folded operands, decode and MMAs as v11/v12 (bit-identical
// output), with weight scales read once a stage as words (the bf16x2 multiplier from one byte permute and
// one multiply-add; a stage holding a scale > 128 runs the old per-word decode, detected in the stage
// barrier), 32-bit copy offsets computed once per block and no activation scale copies; and two block
// shapes: the 32-row gate_up on 2 stages of 8 k-blocks (3 blocks/SM instead of 2), the 64-row down on 4
// k-blocks a stage with 2 blocks/SM (v12: 8 k-blocks, 1 block/SM). 8-row tiles, quantizer and route are
// v12's. Measured on the H200: docs/perf.md, section "moe_mxfp4 v13". Builds without mma.sync (AMD) run v11's dispatch.
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
    case 8: return moe_wg8::carve(c, nullptr, nullptr, 2);  // f16 activations
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
    case 8: moe_wg8::launch8_f16<FG1, 4, WG2>(a); break;
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

MOE_MXFP4_VARIANT("v13", gpu,
                  "v12 + 32/64-row tiles on moe_wide16.h: scale words a stage, 32-bit copy offsets hoisted, no activation "
                  "scale copies (same bf16-folded decode and MMAs, bit-identical); 32-row gate_up 3 blocks/SM, 64-row down 2/SM",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
