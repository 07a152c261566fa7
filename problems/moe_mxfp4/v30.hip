// v30: v29 with moe_ws30's 64-row path (E33 bs512 at d_expert 512 / 2048): v28's fp8 path with no wgmma drain at the
// stage barriers (copies STAGES - 2 stages ahead, 4 stages) and branch-free e2m1 rounding in gate_up's SwiGLU
// requantization and in the hidden-state quantizer; the output is v29's bit for bit (docs/perf.md, section "moe_mxfp4 v30"). The other
// shapes run v29's paths. Builds without mma.sync (AMD) run v11's dispatch, as v29.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8x.h"
#include "problems/common/moe_wide27.h"
#include "problems/common/moe_ws30.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, Or<moe_wide27::Path, moe_wide22::Path32>, Or<moe_ws30::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v30", gpu,
                  "v29 + moe_ws30's 64-row fp8 path (no wgmma drain at stage barriers, branch-free e2m1 rounding in the quantizers)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
