// v35 (helper moe-ws9, session 9): v33 with the 64-row shapes' fp8 path from moe_ws9.h: moe_ws30's kernels with the
// mainloop's stage loop unrolled by its 4 stages (every slot offset and B descriptor a constant; no spills). Measured
// equal to v33 within noise (docs/perf-moe-ws9.md: the deeper wgmma pipelines tried there were slower). Output bit for
// bit v33's. Every other shape exactly as v33 dispatches it.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_r8d.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_ws30.h"
#include "problems/common/moe_ws9.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_r8d::Path<>, Or<moe_rows8x::Rows8XPath<>, V20Rows8>>,
                       Or<moe_w32::Path, moe_wide22::Path32>, Or<moe_ws9::Path, Or<moe_ws30::Path, V20Rows64>>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v35", gpu,
                  "v33 with the 64-row fp8 mainloop's stages unrolled by slot (moe_ws9.h; equal to v33 within noise)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
