// v30f (test only): v30's 64-row path with the exact fix-up forced on some weight rows and SwiGLU rows (FORCE = 1 in
// the gate_up / down kernels; the prologue's token flags are not forced, as in v28's PRO form), to check the fix-up
// of moe_ws30.h's tile bodies on the 64-row shapes. Not for timing.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8x.h"
#include "problems/common/moe_wide27.h"
#include "problems/common/moe_ws30.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, Or<moe_wide27::Path, moe_wide22::Path32>,
                       Or<moe_ws30::PathOf<moe_ws30::G160w, moe_ws30::G160w, 1>, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v30f", gpu,
                  "test only: v30's 64-row path with the exact fix-up forced on some weight rows and SwiGLU rows",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
