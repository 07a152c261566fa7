// v25: the session-6 paths in one variant: v21's 8-row path (moe_rows8w.h: E 257 bs 16 / 128, E 33 bs 16), v22's
// 32-row path (moe_wide22.h: E 257 bs 512, E 33 bs 128) and v23's fp8 e4m3 wgmma path (moe_fp8_rows.h,
// moe_fp8r::Path: E 33 bs 512 at d_expert 512 and 2048), each exactly as v21.hip / v22.hip / v23.hip launch
// them (docs/perf.md, sections "moe_mxfp4 v21", "moe_mxfp4 v22" and "moe_mxfp4 v23"); 64-row shapes the fp8
// path does not support run v20's. The 256-row tile form (moe_fp8r::PathT, run as v25t in session 6's
// final call) was slower; its variant was removed.
// Builds without mma.sync (AMD) run v11's dispatch, as v20.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wide22.h"
#include "problems/common/moe_fp8_rows.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8w::Rows8Path, V20Rows8>, moe_wide22::Path32, Or<moe_fp8r::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v25", gpu,
                  "v21's 8-row path + v22's 32-row path + v23's fp8 e4m3 wgmma path on the 64-row shapes",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
