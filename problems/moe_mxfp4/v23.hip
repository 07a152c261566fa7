// v23: v20 with the 64-row shapes (E33 bs512 at d_expert 512 and 2048) on fp8 e4m3 wgmma
// (moe_fp8_rows.h): 128-row tiles, m64n128k32 with the weights decoded into e4m3 registers by a
// byte-permute table that folds each e8m0 block scale relative to a per-row reference, e4m3
// activations with their block scales folded relative to a per-token (hidden) or fixed (SwiGLU
// output) reference, references applied in the epilogues; rows / tokens whose scales leave the
// exact window are recomputed exactly (never on the benchmark data). Every other shape: v20's code.
#ifndef FP8_FORCE
#define FP8_FORCE 0
#endif
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_fp8_rows.h"

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using Paths = Dispatch<V20Rows8, V20Rows32, Or<moe_fp8r::PathOf<moe_fp8r::G1, moe_fp8r::G2, FP8_FORCE>, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

#if !FP8_FORCE  // v23f.hip includes this file with FP8_FORCE 1 and registers itself
MOE_MXFP4_VARIANT("v23", gpu,
                  "v20 + the 64-row shapes on fp8 e4m3 wgmma (128-row tiles, block scales folded into the e4m3 "
                  "values, exact fix-up outside the window)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
