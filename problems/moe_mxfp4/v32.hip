// v32: the session-8 paths in one dispatch: v31's 32-row path (moe_w32.h: down overlapping gate_up's last wave;
// E 257 bs 512, E 33 bs 128) and v30's 64-row path (moe_ws30.h: the fp8 mainloop without the wgmma drain at stage
// barriers; E 33 bs 512 at d_expert 512 / 2048), each as its own variant runs it, with v29's 8-row path (moe_rows8x.h)
// (docs/perf.md, sections "moe_mxfp4 v30" and "moe_mxfp4 v31"). Builds without mma.sync (AMD) run v11's dispatch.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8x.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_ws30.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, Or<moe_w32::Path, moe_wide22::Path32>,
                       Or<moe_ws30::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v32", gpu,
                  "v29's 8-row path + v31's 32-row path (down overlapping gate_up's last wave) + v30's 64-row path (fp8 mainloop without the stage drain)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
