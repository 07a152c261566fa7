// v34: v33 with y stored as bf16 (MOE_Y_BF16, helper moe-y16, session 9; docs/perf.md, section "moe_mxfp4 v34"):
// the down stage writes each pair's weighted row y[pair, n] = bf16(weight * (a W_down^T)) (rounded once, RNE) instead
// of fp32, and the combine reads 16 bytes (8 outputs) a slot and sums the token's rows in fp32 in slot order as before
// (deterministic), then rounds to bf16. Halves the down's y stores and the combine's loads (P x H x 2 bytes instead of
// 4). Every kernel, dispatch and k order otherwise exactly v33's. Builds without mma.sync (AMD) run v11's dispatch
// (with bf16 y).
#define MOE_Y_BF16 1
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

#if !defined(MOE_Y_BF16_CVT)  // v34c.hip includes this file with the cvt rounding and registers itself
MOE_MXFP4_VARIANT("v34", gpu,
                  "v33 with y (the down's weighted rows) stored as bf16: half the y stores and combine loads; sum in fp32 "
                  "in slot order (MOE_Y_BF16)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
