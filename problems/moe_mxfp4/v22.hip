// v22: v20 with its 32-row path (E 257 bs 512, E 33 bs 128: bs x k / routed experts in (8, 40]) on
// moe_wide22.h (Path32): one prologue launch (the route in block 0 beside the quantizer blocks) on both;
// at E 257 bs 512 (>= 1000 gate_up blocks) v20's gate_up at 4 k-blocks x 2 stages and 4 blocks/SM, and a
// down whose blocks run a tile's activations (copied once) against runs of 8 128-row weight slices in one
// continuous pipeline (4 k-blocks x 4 stages, 4 blocks/SM); at E 33 bs 128 v20's gate_up and down.
// Every other shape runs v20's code exactly as v20.hip launches it. Bit-identical to v20 (same products,
// k order and fp32 sums of every real column). Measured in docs/perf.md, section "moe_mxfp4 v22".
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_wide22.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<V20Rows8, moe_wide22::Path32, V20Rows64>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

MOE_MXFP4_VARIANT("v22", gpu,
                  "v20 + 32-row path: one-launch quantize + route, down blocks over runs of weight slices with the  tile's activations copied once",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
