// v31: v29 with the 32-row shapes (E 257 bs 512, E 33 bs 128) on moe_w32::Path: v27's kernels and numerics with a
// tile-major gate_up grid and down overlapping gate_up's last wave (per-tile ready counts; docs/perf.md, section "moe_mxfp4 v31").
// Every other shape as v29 (v26's 8-row path, v28's 64-row path).
// Builds without mma.sync (AMD) run v11's dispatch, as v29.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8x.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_fp8_rows2.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, Or<moe_w32::Path, moe_wide22::Path32>,
                     Or<moe_fp8r2::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v31", gpu,
                  "v29 + 32-row path with down overlapping gate_up's last wave (tile-major gate_up, per-tile ready counts)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
