// v11e: candidate: v11 with 32-row tiles on the unrolled 8-warp-K plan; 8-row gate_up 4 k-blocks a stage, 4 stages, 128-row down, 8 blocks per SM. Kernels from moe_tile_pipeline.h; only the rows per tile and the path and block shape
// per tile size differ.
#include "problems/common/moe_tile_pipeline.h"

namespace {
using moe_tile::Bf16Folded;
using moe_tile::ScaledDecode;

#if defined(MOE_HAVE_MMA_SYNC)
// 8-row tiles: 4 warps, MT 16-row groups a warp, KS k-blocks a stage, the register budget of MIN blocks
// per SM with the k-block loop still unrolled.
template <int MT, int KS, int STAGES, int MIN>
struct CfgM : moe_tile::Cfg<4, 1, MT, 1, KS, STAGES> {
  static constexpr int kMinBlocks = MIN;
};
template <int BN>
struct Plan8 : moe_tiled::Plan<BN> {};
template <>
struct Plan8<8> {
  using G1 = CfgM<1, 4, 4, 8>;
  using G2 = CfgM<2, 4, 2, 8>;
};
#else
template <int BN>
struct Plan8 {};
#endif

// Rows per tile from the expected rows per routed expert (builds without mma.sync: v10's rule, 16 -> 32).
int rows_for(const MoeConfig& c) {
#if defined(MOE_HAVE_MMA_SYNC)
  const int pe = c.bs * c.n_experts_per_token / c.n_routed_experts;
  return pe <= 8 ? 8 : pe <= 40 ? 32 : 64;
#else
  const int r = moe_tiled::tile_rows_for(c);
  return r == 16 ? 32 : r;
#endif
}

size_t workspace_bytes(const MoeConfig& c) {
  switch (rows_for(c)) {
    case 8: return moe_pipeline::carve(c, 8, nullptr, nullptr, ScaledDecode::kActBytes);
    case 32: return moe_pipeline::carve(c, 32, nullptr, nullptr, Bf16Folded::kActBytes);
    default: return moe_pipeline::carve(c, 64, nullptr, nullptr, Bf16Folded::kActBytes);
  }
}

void launch(const MoeArgs& a) {
  switch (rows_for(a.cfg)) {
    case 8: moe_tiled::launch_one<8, Plan8, ScaledDecode>(a); break;
    case 32: moe_tiled::launch_one<32, moe_tiled::PlanWide, Bf16Folded>(a); break;
    default: moe_tiled::launch_one<64, moe_tiled::PlanWide, Bf16Folded>(a); break;
  }
}
}  // namespace

MOE_MXFP4_VARIANT("v11e", gpu,
                  "candidate: v11 with 32-row tiles on the unrolled 8-warp-K plan; 8-row gate_up 4 k-blocks a stage, 4 stages, 128-row down, 8 blocks per SM",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
