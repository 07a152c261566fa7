// v2: token-expert pairs sorted by expert on the GPU into padded tiles, then two tiled grouped GEMMs
// on fp32 FMAs (moe_scalar_gemm.h): gate_up with fused SwiGLU and requantization of a, down with the
// routing weight in its epilogue; a deterministic combine sums each token's pairs in slot order.
#include "problems/moe_mxfp4/moe_pipeline.h"
#include "problems/moe_mxfp4/moe_scalar_gemm.h"

namespace {

int tile_rows_for(const MoeConfig& c) {
  const int per_expert = c.bs * c.n_experts_per_token / c.n_routed_experts;
  return per_expert <= 8 ? 8 : (per_expert <= 16 ? 16 : 32);
}

size_t workspace_bytes(const MoeConfig& c) { return moe_pipeline::carve(c, tile_rows_for(c), nullptr, nullptr); }

void launch(const MoeArgs& a) {
  const int bt = tile_rows_for(a.cfg);
  moe_pipeline::require_workspace(a, bt);
  moe_pipeline::Workspace ws;
  moe_pipeline::carve(a.cfg, bt, a.workspace, &ws);
  moe_pipeline::launch_prologue(a, ws, bt);
  if (bt == 8) moe_scalar_gemm::launch<8>(a, ws);
  else if (bt == 16) moe_scalar_gemm::launch<16>(a, ws);
  else moe_scalar_gemm::launch<32>(a, ws);
  moe_pipeline::launch_combine(a, ws);
}

}  // namespace

MOE_MXFP4_VARIANT("v2", gpu,
                  "GPU sort by expert, tiled grouped GEMMs on fp32 FMAs with fused SwiGLU + requant and weighted "
                  "epilogue, deterministic combine",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_scale,down_weight_scale,topk_weights,"
                  "topk_ids",
                  0);
