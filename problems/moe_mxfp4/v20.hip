// v20: v19 with the 32-row tiles (E 257 bs 512, E 33 bs 128) on moe_wide16n.h: each tile runs only the
// 8-column groups that hold real sorted rows (2, 3 or 4 of 4: ceil(rows / 8), at least 2), so a half-empty
// tile issues about half the MMAs and B loads per decoded weight word; the tiles taken in reverse route
// order (the shared expert's full tiles first, the lightest last); gate_up and combine launched as
// programmatic dependents. And v19's 8-row chain (moe_rows8b.h) only where it was measured to win
// (d_expert 256, the E 257 benchmark shapes); other 8-row shapes with v16's persistent-down rule (e.g. the
// d_expert 1024 test shape) take v16's chain.
// Everything else is v19's (= v16's) code. Bit-identical to v16 / v19 (the real columns' products, k order
// and sums are unchanged; skipped columns are padding). The same column groups on f16
// operands (measured slower) are in commit f5e16ae (moe_wide_f16n.h). Builds without mma.sync (AMD) run v11's
// dispatch.
#include "problems/common/moe_dispatch.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<V20Rows8, V20Rows32, V20Rows64>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v20", gpu,
                  "v19 + 32-row tiles: empty 8-column groups skipped, reverse tile order, dependent launches; v19's E257  chain only at d_expert 256",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
