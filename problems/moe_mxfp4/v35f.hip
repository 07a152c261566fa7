// v35f (helper moe-ws9, session 9; test only): v35's 64-row path with the exact fix-up forced on some weight rows and
// SwiGLU rows (FORCE = 1 in gate_up / down; no prologue launch, whose quantizer does not force), as v30f. Not for timing.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_r8d.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_ws30.h"
#include "problems/common/moe_ws9.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_r8d::Path<>, Or<moe_rows8x::Rows8XPath<>, V20Rows8>>,
                       Or<moe_w32::Path, moe_wide22::Path32>, Or<moe_ws9::PathOf<moe_ws9::G9, moe_ws9::G9, 1>, Or<moe_ws30::Path, V20Rows64>>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v35f", gpu,
                  "test only: v35's 64-row path with the exact fix-up forced on some weight rows and SwiGLU rows",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
