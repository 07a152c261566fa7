// v9: v4's tiled pipeline with the measured best path per tile size (moe_tiled::launch_best): the e4m3
// shift decode for 8- and 32-row tiles, native f16 mma.sync for 16, f16 with one 8-warp block per SM
// for 64 (the matrix-bound 33-expert shapes).
#include "problems/common/moe_tile_pipeline.h"

namespace {
size_t workspace_bytes(const MoeConfig& c) { return moe_tiled::workspace_bytes_best(c); }
void launch(const MoeArgs& a) { moe_tiled::launch_best(a); }
}  // namespace

MOE_MXFP4_VARIANT("v9", gpu,
                  "v4's block-tile pipeline with the best measured path per tile size (e4m3 shift decode or native f16 "
                  "mma.sync, 4- or 8-warp plans)",
                  "hidden_states,gate_up_weight_shuffled,down_weight_shuffled,gate_up_weight_scale,down_weight_scale,"
                  "topk_weights,topk_ids",
                  0);
