// v26: v25 with the 8-row shapes (E 257 bs 16 / 128, E 33 bs 16) on moe_rows8x.h's path: the gate_up on the
// integer mma.sync (m16n8k32 s8: the e2m1 weights decoded by byte permutes into a positive and a negative operand,
// the activations stored as int8 2 x value, 1 byte a value, scales folded where they fit), 5 stages; same
// down / combine as v25; bit for bit v25's output (docs/perf.md, section "moe_mxfp4 v26"; measured there as v26y, this
// configuration: 117.1 / 258.2 / 84.5 us against v25's 118.8 / 266.4 / 85.0 in the same call).
// Every other shape exactly as v25 dispatches it (v22's 32-row path, v23's fp8 path, v20's 64-row path).
// Builds without mma.sync (AMD) run v11's dispatch, as v25.
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_rows8x.h"
#include "problems/common/moe_wide22.h"
#include "problems/common/moe_fp8_rows.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, moe_wide22::Path32, Or<moe_fp8r::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v26", gpu,
                  "v25 with the 8-row shapes' gate_up on the s8 mma.sync, 1-byte activations, 5 stages (moe_rows8x.h)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
