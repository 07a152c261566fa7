// v12: v11 with the 8-row tiles (E 257 bs 16 / 128, E 33 bs 16) down on the warpgroup MMA, gate_up on v11's mma.sync tile (problems/common/moe_wg8.h:
// e4m3 wgmma m64n8k32, A = the weights decoded into e4m3 registers by 7 integer ops a word, B = the 8
// activation rows read by the tensor unit from shared memory, the scale product built as float bits with
// one shift-add, 32-bit copy offsets hoisted out of the loop); the 64-row tiles (E 33 bs 512) with 8
// k-blocks a stage instead of 4 (same kernels, PlanWide<64> otherwise); a branch-free e2m1 quantizer of
// the hidden states and a 1024-thread route for every shape (v11: E rounded up to 64 threads, 64 at
// E 33). The 32-row tiles are v11's kernels. Builds without mma.sync (AMD) run v11's dispatch.
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
using MG1 = moe_tile::Cfg<4, 1, 1, 1, 8, 4>;  // gate_up: v11's 8-row block (64 rows x 8, mma.sync)
using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3, 0>;  // down: 256 rows x 8, 4 k-blocks a stage, 3 stages, 3 blocks/SM
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
    case 8: return moe_wg8::carve(c, nullptr, nullptr);
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
    case 8: moe_wg8::launch8_mma<MG1, WG2>(a); break;
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
                  "v11 + 8-row down on wgmma e4m3 (weights decoded in registers, activations from shared memory), 64-row tiles with 8 k-blocks a stage, branch-free quantizer, 1024-thread route",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
