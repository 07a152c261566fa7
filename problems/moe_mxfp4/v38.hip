// v38 (session 9, helper moe-y16x2): v37 with the bf16 y of the 32- and 64-row (wgmma) down epilogues written as 4-byte
// pairs of adjacent rows (MOE_Y_BF16X2: moe_tiled::store_weighted_row_pairs; lanes lane and lane ^ 4 swap one
// column's values, cvt.rn.bf16x2 of the same fp32 products) instead of one 2-byte store a value. The same bits as
// v37 (docs/perf.md, section "moe_mxfp4 v38"). The 8-row paths and the fix-up stores keep their scalar stores.
// Builds without mma.sync (AMD) run v11's dispatch.
#define MOE_Y_BF16 1
#define MOE_Y_BF16_CVT 1
#define MOE_Y_BF16X2 1
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_r8d.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_ws30.h"

#ifndef V38_FORCE  // v38f.hip includes this file with the exact fix-up forced and registers itself
#define V38_FORCE 0
#define V38_SELF 1
#endif

#if defined(MOE_WG8_HOST)
namespace moe_v38 {  // named: a kernel argument type in the file's unnamed namespace confuses nvcc's stub
// moe_wide27's 32-row configuration with the copy distance of moe_fp8r::LoopDist.
struct G27d : moe_w32::G27 {
  static constexpr int DIST = moe_w32::G27::STAGES - 2;
};
}  // namespace moe_v38
#endif

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using moe_v38::G27d;
// moe_w32::Path's plans (E257 bs512: 1 gate_up part, down NS 4, 256-thread prologue blocks; E33 bs128: 2 parts, NS 2,
// 1024 threads) with G27d's gate_up.
using Path32 = moe_w32::PathOf<moe_w32::Plan<G27d, moe_w32::G27, 1, 4, 0, V38_FORCE, 256>,
                               moe_w32::Plan<G27d, moe_w32::G27, 2, 2, 0, V38_FORCE, 1024>>;
#if V38_FORCE
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, Or<Path32, moe_wide22::Path32>,
                       Or<moe_ws30::PathOf<moe_ws30::G160w, moe_ws30::G160w, V38_FORCE>, V20Rows64>>;
#else
using Paths = Dispatch<Or<moe_r8d::Path<>, Or<moe_rows8x::Rows8XPath<>, V20Rows8>>, Or<Path32, moe_wide22::Path32>,
                       Or<moe_ws30::Path, V20Rows64>>;
#endif
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

#if defined(V38_SELF)
MOE_MXFP4_VARIANT("v38", gpu,
                  "v37 with the wgmma paths' bf16 y stored as 4-byte pairs of adjacent rows (lane ^ 4 swap, "
                  "cvt.rn.bf16x2; same bits)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
