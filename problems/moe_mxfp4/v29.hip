// v29: the session-7 paths in one dispatch: v26's 8-row path (moe_rows8x.h: the gate_up on the s8 mma.sync; E 257
// bs 16 / 128, E 33 bs 16), v27's 32-row path (moe_wide27.h: fp8 e4m3 wgmma with small N; E 257 bs 512, E 33
// bs 128) and v28's 64-row path (moe_fp8_rows2.h: 160-row tiles, down overlapping gate_up; E 33 bs 512 at d_expert
// 512 / 2048), each as its own variant runs it (docs/perf.md, sections "moe_mxfp4 v26", "v27" and "v28").
// Builds without mma.sync (AMD) run v11's dispatch, as v25.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8x.h"
#include "problems/common/moe_wide27.h"
#include "problems/common/moe_fp8_rows2.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, Or<moe_wide27::Path, moe_wide22::Path32>, Or<moe_fp8r2::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v29", gpu,
                  "v26's 8-row path (s8 gate_up) + v27's 32-row path (fp8 small-N wgmma) + v28's fp8 64-row path (160-row tiles, overlapped down)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
