// v28: v25 (v21's 8-row path, v22's 32-row path, v23's fp8 e4m3 wgmma path) with moe_fp8_rows2.h's form of the
// fp8 path (moe_fp8r2::Path: tiles of up to 160 rows split evenly per expert, down overlapping gate_up's last
// wave, quantizer + route in one launch, dependent launches) where v25 runs moe_fp8r::Path (the 64-row shapes,
// E33 bs512 at d_expert 512 / 2048); every other shape is dispatched exactly as v25. Measured in
// docs/perf.md, section "moe_mxfp4 v28". Builds without mma.sync (AMD) run v11's dispatch, as v25.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8w.h"
#include "problems/common/moe_wide22.h"
#include "problems/common/moe_fp8_rows2.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8w::Rows8Path, V20Rows8>, moe_wide22::Path32, Or<moe_fp8r2::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v28", gpu,
                  "v25 with moe_fp8_rows2.h's fp8 path on E33 bs512: 160-row tiles split evenly per expert, down overlapping gate_up's last wave, one prologue launch",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
