// v9: v4's tiled pipeline (moe_tile_pipeline.h) with the measured best path per tile size (H200,
// docs/perf.md, 2026-11-29 moe-kernels2): the e4m3 shift decode for 8- and 32-row tiles, native f16
// mma.sync for 16, f16 with one 8-warp block per SM for 64 (the matrix-bound 33-expert shapes).
#include "problems/common/moe_tile_pipeline.h"

namespace {
using moe_tile::F16Decode;
using moe_tile::ScaledDecode;

size_t workspace_bytes(const MoeConfig& c) {
  const int bn = moe_tiled::tile_rows_for(c);
  return bn == 16 || bn == 64 ? moe_tiled::workspace_bytes<F16Decode>(c) : moe_tiled::workspace_bytes<ScaledDecode>(c);
}

void launch(const MoeArgs& a) {
  switch (moe_tiled::tile_rows_for(a.cfg)) {
    case 8: moe_tiled::launch_one<8, moe_tiled::Plan, ScaledDecode>(a); break;
    case 16: moe_tiled::launch_one<16, moe_tiled::Plan, F16Decode>(a); break;
    case 32: moe_tiled::launch_one<32, moe_tiled::Plan, ScaledDecode>(a); break;
    default: moe_tiled::launch_one<64, moe_tiled::PlanWide, F16Decode>(a); break;
  }
}
}  // namespace

MOE_MXFP4_VARIANT("v9", gpu,
                  "v4's block-tile pipeline with the best measured path per tile size (e4m3 shift decode or native f16 "
                  "mma.sync, 4- or 8-warp plans)",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
