// v27f (test only): v27 with moe_wide27::PathForced on the 32-row shapes: the same kernels with the exact fix-up
// forced (FORCE 1) on some tokens, weight rows and SwiGLU rows, down_slices not dependent, prologue at 1024 threads
// a token (the form run in the helper's calls 4 and 5). Checks the fix-up, which the benchmark data never triggers.
// Not for timing.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wide27.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8w::Rows8Path, V20Rows8>, Or<moe_wide27::PathForced, moe_wide22::Path32>, Or<moe_fp8r::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v27f", gpu,
                  "test only: v27 with the fix-up forced",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
