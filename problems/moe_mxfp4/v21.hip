// v21: v20 with moe_rows8w.h's 8-row path on the 8-row shapes with d_expert <= 512: E 257 bs 16 / 128 (v20 ran
// v19's chain there; v21's gate_up copies its first weight stages before the wait for the prologue, signalled
// by a route-done flag, and reads the weight words by ldmatrix.x4) and E 33 bs 16 (v20 ran v16's chain there;
// v21 runs the per-tile overlapped chain, which is most of its gain: docs/perf.md, section "moe_mxfp4 v21"). Every other shape
// runs v20's paths exactly as v20.hip launches them. Bit-identical to v20 (same products, same order).
// Builds without mma.sync (AMD) run v11's dispatch, as v20.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8w.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8w::Rows8Path, V20Rows8>, V20Rows32, V20Rows64>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v21", gpu,
                  "v20 + 8-row gate_up: first weight stages copied before the prologue wait (route flag), ldmatrix  weight words; v19's overlapped chain also at E33 bs16",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
