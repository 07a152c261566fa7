// v27: v25 with the 32-row shapes (E 257 bs 512, E 33 bs 128) on moe_wide27.h's fp8 e4m3 wgmma path
// (small-N wgmma on 32- or 64-row tiles, moe_fp8r's weight decode; docs/perf.md, section "moe_mxfp4 v27"); every other
// shape exactly as v25 dispatches it (v21's 8-row path, v23's fp8 64-row path, v20's 64-row kernels).
// Builds without mma.sync (AMD) run v11's dispatch, as v25.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wide27.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8w::Rows8Path, V20Rows8>, Or<moe_wide27::Path, moe_wide22::Path32>, Or<moe_fp8r::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v27", gpu,
                  "v25 with the 32-row shapes on fp8 e4m3 wgmma with small N (moe_wide27.h)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
