// v4: the sorted pipeline on block-tile fp8 e4m3 mma.sync GEMMs (moe_tile_pipeline.h): cp.async
// pipelines through shared memory, tile shapes chosen by the expected rows per expert, a block-scan
// route, and the shift decode (e2m1 -> e4m3 of value * 2^-6, 8 integer ops a word; the 2^6 goes into
// the scale). Builds without mma.sync run the portable scalar kernels of v2.
#include "problems/common/moe_tile_pipeline.h"

namespace {
size_t workspace_bytes(const MoeConfig& c) { return moe_tiled::workspace_bytes<moe_tile::ScaledDecode>(c); }
void launch(const MoeArgs& a) { moe_tiled::launch<moe_tiled::Plan, moe_tile::ScaledDecode>(a); }
}  // namespace

MOE_MXFP4_VARIANT("v4", gpu,
                  "sorted grouped GEMMs, block tiles on fp8 e4m3 mma.sync with cp.async pipelines, shift decode of "
                  "e2m1, block-scan route, fused SwiGLU + requant, deterministic combine",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
