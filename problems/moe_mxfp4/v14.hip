// v14: v13 with the 64-row tiles (E 33 bs 512, d 512 and 2048) on the Hopper warpgroup MMA
// (problems/common/moe_wgmma_rows.h): v13's bf16-folded weight decode (same instructions, same values)
// feeds wgmma m64n64k16 as the register A operand (weight rows = M, the 64 tile rows = N from shared
// memory in the no-swizzle K-major layout), one wgmma group per k-block while the next k-block is
// decoded; activations stored in wgmma-k order; the next stage's copies issued in portions after each
// k-block's wgmma group instead of in one burst after the stage barrier. Output bit-identical to v13.
// 8- and 32-row tiles, route and combine are v13's (32-row tiles on wgmma measured slower). Builds
// without sm_90a device code trap in the wgmma kernels (the harness builds sm_90a); builds without
// mma.sync (AMD) run v11's dispatch. Measured on the H200: docs/perf.md, section "moe_mxfp4 v14".
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
using FG1 = moe_wg8::F16Cfg<8, 4>;        // v12/v13's 8-row gate_up
using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;  // v12/v13's 8-row down
using W32G1 = moe_wide16::Cfg<4, 2, 4, 8, 2>;  // v13's 32-row kernels
using W32G2 = moe_wide16::Cfg<4, 2, 4, 4, 3>;
// 64-row tiles: 256 x 64 blocks of 8 warps (2 warpgroups, 2 16-row groups a warp), 8 k-blocks a stage,
// 3 stages (198 KB, 1 block/SM), 4-row activation copies, 2 A buffers, copies spread over the k-blocks.
using R64G1 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;
using R64G2 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // down, K > 512
using R64G2S = moe_wgrows::Cfg<8, 2, 64, 4, 4, 1, 4, 2, true>;  // down, K <= 512: 4 k-blocks a stage, 4 stages (132 KB)
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

MOE_MXFP4_VARIANT("v14", gpu,
                  "v13 + 64-row tiles on wgmma (moe_wgmma_rows.h): v13's bf16-folded weight decode as the register A operand "
                  "of wgmma m64n64k16 (tokens as N from shared memory), copies spread over the k-blocks (bit-identical to v13)",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
