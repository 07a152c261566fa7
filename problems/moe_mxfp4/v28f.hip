// v28f (test only): v28's fp8 path (moe_fp8r2, gate_up / down overlapped) with the exact fix-up forced on some
// weight rows, tokens and SwiGLU rows (FORCE = 1, as v23f), launched without the fused prologue (which has no
// FORCE form): checks the fix-up of moe_fp8_rows2.h's kernels on the 64-row shapes. Not for timing.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wide22.h"
#include "problems/common/moe_fp8_rows2.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8w::Rows8Path, V20Rows8>, moe_wide22::Path32,
                      Or<moe_fp8r2::PathOf<moe_fp8r2::G160s, moe_fp8r2::G160s, true, false, 1>, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v28f", gpu,
                  "test only: v28's fp8 path with the exact fix-up forced on some weight rows, tokens and SwiGLU rows",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
