// v31f (test only): v31 with the exact fix-up forced (FORCE 1) on some tokens, weight rows and SwiGLU rows.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8x.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_fp8_rows2.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, Or<moe_w32::PathForced, moe_wide22::Path32>,
                     Or<moe_fp8r2::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v31f", gpu,
                  "test only: v31 with the fix-up forced",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
