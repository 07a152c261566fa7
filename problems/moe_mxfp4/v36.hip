// v36: v33 with the 32-row shapes on moe_w36::Path (helper moe-w32b, session 9; docs/perf-moe-w32b.md): moe_w32's path
// with a 9-instruction weight decode (decode8k) in gate_up and down, gate_up's copies 2 stages ahead without the wgmma
// drain at its stage barriers, and a prologue route with its loads batched and a shuffle scan (route_fast). Same
// decoded bytes, k order and epilogues: output bit for bit v33's. Every other shape exactly as v33 runs it. Builds
// without mma.sync (AMD) run v11's dispatch.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_r8d.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_w36.h"
#include "problems/common/moe_ws30.h"

#ifndef V36_PATH
#define V36_PATH moe_w36::Path
#define V36_SELF 1
#endif

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_r8d::Path<>, Or<moe_rows8x::Rows8XPath<>, V20Rows8>>,
                       Or<V36_PATH, Or<moe_w32::Path, moe_wide22::Path32>>, Or<moe_ws30::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

#if defined(V36_SELF)  // v36f.hip includes this file with another V36_PATH
MOE_MXFP4_VARIANT("v36", gpu,
                  "v33 with the 32-row path's 9-instruction decode, no-drain gate_up and batched route (moe_w36.h)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
