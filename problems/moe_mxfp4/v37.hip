// v37 (session 9, integrator): v34c (y stored as bf16, rounded by cvt: docs/perf.md, section "moe_mxfp4 v34") with the
// 32-row shapes' gate_up copies STAGES - 2 stages ahead, so its stage barriers no longer drain the wgmma groups (the
// configuration helper moe-w32b measured at -1% of gate_up on E257 bs512 in v36: docs/perf.md, section "moe_mxfp4
// v36"; v30's change on the 64-row path). Same kernels and k order as v34c otherwise: the outputs are v34c's.
// Builds without mma.sync (AMD) run v11's dispatch.
#define MOE_Y_BF16 1
#define MOE_Y_BF16_CVT 1
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_r8d.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_ws30.h"

#ifndef V37_FORCE  // v37f / v38 / v38f / v38m.hip include this file with their options and register themselves
#define V37_FORCE 0
#define V37_SELF 1
#endif

#if defined(MOE_WG8_HOST)
namespace moe_v37 {  // named: a kernel argument type in the file's unnamed namespace confuses nvcc's stub
// moe_wide27's 32-row configuration with the copy distance of moe_fp8r::LoopDist.
struct G27d : moe_w32::G27 {
  static constexpr int DIST = moe_w32::G27::STAGES - 2;
};
// The E257 bs512 plan's down configuration: moe_w32::G27, or (MOE_DOWN_ZERO_PAD, v72) G27 zero-filling its tiles'
// padding rows of activations instead of reading them (rows no gate_up block writes: compute-sanitizer's initcheck
// reported the reads).
#if defined(MOE_DOWN_ZERO_PAD)
struct G27Down1 : moe_w32::G27 {
  static constexpr bool kZeroPad = true;
};
#else
using G27Down1 = moe_w32::G27;
#endif
// The E33 bs128 plan's down configuration: G27Down1, or (v54) without the staged y rows (MOE_Y_STAGED staged both
// plans' in v51-v52).
#if defined(MOE_Y_STAGED_PLAN1)
struct G27Plan2 : G27Down1 {
  static constexpr bool kYStage = false;
};
#else
using G27Plan2 = G27Down1;
#endif
#if defined(MOE_FEW64)
// v81: the E33 bs128 plan (moe_w32's PFew) on tiles of up to 64 rows, so that an expert's ~32 +- 6 pairs take one
// tile and its weights are decoded once (v54: 32-row tiles, ~half the routed experts decoded twice). One 16-row group
// a warp (128 weight rows a block) keeps the accumulators at G27d's 32 registers a thread (2 blocks an SM).
using C64 = moe_wide27::Cfg<8, 1, 64, 4, 4, 2, true, 2>;
struct G64 : C64 {
  static constexpr int DIST = STAGES - 2;
};
struct G64Down : C64 {
  static constexpr bool kZeroPad = true;
  static constexpr bool kYStage = false;
};
#endif
}  // namespace moe_v37
#endif

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using moe_v37::G27d;
// moe_w32::Path's plans (E257 bs512: 1 gate_up part, down NS 4, 256-thread prologue blocks; E33 bs128: 2 parts, NS 2,
// 1024 threads) with G27d's gate_up; with MOE_FEW64 (v81) E33 bs128's plan runs G64's 64-row tiles instead
// (MOE_FEW64 gate_up parts, NS 4).
#if defined(MOE_FEW64)
using PFew = moe_w32::Plan<moe_v37::G64, moe_v37::G64Down, MOE_FEW64, 4, 0, V37_FORCE, 1024>;  // MOE_FEW64: K-parts
#else
using PFew = moe_w32::Plan<G27d, moe_v37::G27Plan2, 2, 2, 0, V37_FORCE, 1024>;
#endif
using Path32 = moe_w32::PathOf<moe_w32::Plan<G27d, moe_v37::G27Down1, 1, 4, 0, V37_FORCE, 256>, PFew>;
// The 64-row path: moe_ws30's (MOE_XR_NS > 0, v82: its down with resident activations, MOE_XR_NS column blocks a block).
#if defined(MOE_XR_NS)
using Path64 = moe_ws30::PathXR<MOE_XR_NS, V37_FORCE>;
#elif V37_FORCE
using Path64 = moe_ws30::PathOf<moe_ws30::G160w, moe_ws30::G160w, V37_FORCE>;
#else
using Path64 = moe_ws30::Path;
#endif
#if V37_FORCE
using Paths = Dispatch<Or<moe_rows8x::Rows8XPath<>, V20Rows8>, Or<Path32, moe_wide22::Path32>, Or<Path64, V20Rows64>>;
#else
using Paths = Dispatch<Or<moe_r8d::Path<>, Or<moe_rows8x::Rows8XPath<>, V20Rows8>>, Or<Path32, moe_wide22::Path32>,
                       Or<Path64, V20Rows64>>;
#endif
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

#if defined(V37_SELF)
MOE_MXFP4_VARIANT("v37", gpu,
                  "v34c (bf16 y, cvt rounding) with the 32-row gate_up's copies 2 stages ahead (no wgmma drain at its "
                  "stage barriers)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
