// v26: v25 with the 8-row shapes (E 257 bs 16 / 128, E 33 bs 16) on moe_rows8x.h's path: the gate_up on the
// integer mma.sync (m16n8k32 s8: the e2m1 weights decoded by byte permutes into a positive and a negative operand,
// the activations stored as int8 2 x value, 1 byte a value, scales folded where they fit), 5 stages; same
// down / combine as v25; bit for bit v25's output (docs/perf-moe-rows8c.md; measured there as v26y, this
// configuration: 117.1 / 258.2 / 84.5 us against v25's 118.8 / 266.4 / 85.0 in the same call).
// Every other shape exactly as v25 dispatches it (v22's 32-row path, v23's fp8 path, v20's 64-row path).
// Builds without mma.sync (AMD) run v11's dispatch, as v25.
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_rows8x.h"
#include "problems/common/moe_wgmma_rows.h"
#include "problems/common/moe_wide16n.h"
#include "problems/common/moe_wide22.h"
#include "problems/common/moe_fp8_rows.h"

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
// v20's options (docs/perf.md, section "moe_mxfp4 v20").
using FG1 = moe_wg8::F16Cfg<8, 4>;             // v15's 8-row gate_up
using WG2 = moe_wg8::Cfg<4, 4, 3, 1, 3>;       // v15's 8-row down
using R64G1 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's 64-row gate_up
using R64G2 = moe_wgrows::Cfg<8, 2, 64, 8, 3, 1, 4, 2, true>;   // v14's down, K > 512
using R64G2S = moe_wgrows::Cfg<8, 2, 64, 4, 4, 1, 4, 2, true>;  // v14's down, K <= 512
using Rows8 = moe_rows8x::Rows8XPath<>;  // 5 stages, 4 blocks/SM, 1-byte activations, folded scales
#endif

size_t workspace_bytes(const MoeConfig& c) {
#if defined(MOE_WG8_HOST)
  if (moe_fp8r::Path::applies(c)) return moe_fp8r::Path::workspace_bytes(c);
#endif
  switch (rows_for(c)) {
#if defined(MOE_WG8_HOST)
    case 8: return Rows8::applies(c) ? Rows8::workspace_bytes(c) : moe_rows8b::workspace8b(c);
#else
    case 8: return moe_pipeline::carve(c, 8, nullptr, nullptr, ScaledDecode::kActBytes);
#endif
    case 32: return moe_pipeline::carve(c, 32, nullptr, nullptr, Bf16Folded::kActBytes);
    default: return moe_pipeline::carve(c, 64, nullptr, nullptr, Bf16Folded::kActBytes);
  }
}

void launch(const MoeArgs& a) {
#if defined(MOE_WG8_HOST)
  if (moe_fp8r::Path::applies(a.cfg)) {
    moe_fp8r::Path::launch(a);
    return;
  }
  switch (rows_for(a.cfg)) {
    case 8:
      if (Rows8::applies(a.cfg))
        Rows8::launch(a);
      else if (a.cfg.d_expert == 256 && moe_rows8b::supports8b<FG1, WG2>(a.cfg) &&
               int64_t(moe_pipeline::sizes_of(a.cfg, 8).tiles_max) * (a.cfg.d_hidden / WG2::BM) >=
                   8 * int64_t(moe_rows8b::dyn_slots<WG2>(WG2::kPipeBytes)))
        moe_rows8b::launch8b<FG1, 4, WG2, 0, true>(a);  // v20: v19's chain
      else
        moe_rows8::launch8<FG1, 4, WG2, 5, -1>(a);  // v20: v16's chain (e.g. the d_expert 1024 test shape)
      break;
    case 32:
      moe_wide22::Path32::launch(a);  // v22's 32-row path
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

MOE_MXFP4_VARIANT("v26", gpu, "v25 with the 8-row shapes' gate_up on the s8 mma.sync, 1-byte activations, 5 stages (moe_rows8x.h)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  0);
