// v12: v11 with the 8-row tiles (E 257 bs 16 / 128, E 33 bs 16: up to 8 expected rows per routed expert)
// on new kernels with about half the instructions per weight byte (problems/common/moe_wg8.h): gate_up on
// native f16 mma.sync (11 integer ops decode 8 e2m1 codes into four f16 pairs; no F2FP conversions, no
// emulated e4m3 mma.sync), down on the warpgroup MMA (wgmma e4m3 m64n8k32, A = weights decoded in
// registers, B = activations from shared memory); per-k-block scales as float bits from one shift-add;
// copy offsets computed once per block. The 64-row tiles (E 33 bs 512) run v11's kernels with 8 k-blocks
// a stage instead of 4, the 32-row tiles v11's kernels unchanged; every shape gets a branch-free
// quantizer of the hidden states and a 1024-thread route (v11: E rounded up to 64 threads, 64 at E 33).
// Measured on the H200 as candidate v12e (docs/perf.md, section "moe_mxfp4 v12"). Builds without mma.sync (AMD) run v11's
// dispatch.
#include "problems/common/moe_wg8.h"

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
// 8 k-blocks a stage for the 64-row tiles (one 8-warp block per SM, 3 stages: 207 KB).
template <int BN>
struct PlanK8 : moe_tiled::PlanWide<BN> {};
template <>
struct PlanK8<64> {
  using G1 = moe_tile::Cfg<8, 1, 2, 8, 8, 3>;
  using G2 = moe_tile::Cfg<8, 1, 2, 8, 8, 3>;
};
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
    case 32: moe_wg8::launch_tiled<32, moe_tiled::PlanWide, Bf16Folded>(a); break;
    default: moe_wg8::launch_tiled<64, PlanK8, Bf16Folded>(a); break;
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

MOE_MXFP4_VARIANT("v12", gpu,
                  "v11 + 8-row tiles: gate_up on f16 mma.sync (11-op decode, scale words), down on wgmma e4m3; 64-row tiles with 8 "
                  "k-blocks a stage; branch-free quantizer; 1024-thread route",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
