// v33: v32 with the 8-row shapes' chain from moe_r8d.h (helper moe-r8d, session 8; docs/perf.md, section "moe_mxfp4 v33"): each
// gate_up block of the first wave finds its tile's expert from topk_ids (its first weight copies do not wait for
// the route), and the gate_up grid has rows for at most (P + 7 min(E, P)) / 8 tiles instead of ceil(P / 8) + E
// (fewer empty blocks ahead of the down grid's start). Same kernels' compute and k order: output bit for bit v32's.
// Every other shape exactly as v32 dispatches it. Builds without mma.sync (AMD) run v11's dispatch.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_r8d.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_ws30.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_r8d::Path<>, Or<moe_rows8x::Rows8XPath<>, V20Rows8>>,
                       Or<moe_w32::Path, moe_wide22::Path32>, Or<moe_ws30::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v33", gpu,
                  "v32 with the 8-row gate_up routing its tile locally and a grid bounded by the pairs (moe_r8d.h)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
