// v39 (session 10, helper moe-split64): v38 with the 64-row shapes (E33 bs512, d_expert 512 / 2048) on moe_split64::Path:
// moe_ws30::Path's tiles, launch chain, decode and epilogues with the block's roles split (16 decode warps writing the
// e4m3 weights into shared memory, 2 MMA warpgroups on SS wgmma with the accumulators; problems/common/moe_split64.h).
// Every other shape runs v38's paths (v37's dispatch with MOE_Y_BF16X2). Builds without mma.sync (AMD) run v11's
// dispatch. V39_FORCE (v39f / v39m, test only): the forced exact fix-up on every wgmma path, as v38f / v38m.
#define MOE_Y_BF16 1
#define MOE_Y_BF16_CVT 1
#define MOE_Y_BF16X2 1
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_r8d.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_ws30.h"
#include "problems/common/moe_split64.h"

#ifndef V39_FORCE  // v39f / v39m.hip include this file with their option and register themselves
#define V39_FORCE 0
#define V39_SELF 1
#endif
#ifndef V39_DIAG  // measurement-only forms (moe_split64::Cfg's DIAG; wrong values)
#define V39_DIAG 0
#endif

#if defined(MOE_WG8_HOST)
namespace moe_v39 {  // named: a kernel argument type in the file's unnamed namespace confuses nvcc's stub
// moe_wide27's 32-row configuration with the copy distance of moe_fp8r::LoopDist (v37's G27d).
struct G27d : moe_w32::G27 {
  static constexpr int DIST = moe_w32::G27::STAGES - 2;
};
using G64 = moe_split64::Cfg<4, 4, 128, 4, V39_DIAG>;  // moe_split64::GS with V39_DIAG
}  // namespace moe_v39
#endif

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using moe_v39::G27d;
using Path32 = moe_w32::PathOf<moe_w32::Plan<G27d, moe_w32::G27, 1, 4, 0, V39_FORCE, 256>,
                               moe_w32::Plan<G27d, moe_w32::G27, 2, 2, 0, V39_FORCE, 1024>>;
using Path64 = moe_split64::PathOf<moe_v39::G64, moe_v39::G64, V39_FORCE>;
#if V39_FORCE
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, Or<Path32, moe_wide22::Path32>,
                       Or<Path64, Or<moe_ws30::PathOf<moe_ws30::G160w, moe_ws30::G160w, V39_FORCE>, V20Rows64>>>;
#else
using Paths = Dispatch<Or<moe_r8d::Path<>, Or<moe_rows8x::Rows8XPath<>, V20Rows8>>, Or<Path32, moe_wide22::Path32>,
                       Or<Path64, Or<moe_ws30::Path, V20Rows64>>>;
#endif
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

#if defined(V39_SELF)
MOE_MXFP4_VARIANT("v39", gpu,
                  "v38 with the 64-row shapes on split roles: decode warps write e4m3 weights to shared memory, "
                  "2 MMA warpgroups run SS wgmma",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
