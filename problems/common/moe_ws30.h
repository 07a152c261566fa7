// moe_ws30: a configuration of v29's 64-row fp8 path (moe_fp8_rows2.h: 160-row tiles, route_even, the OVL + PRO
// launch chain; the operands, weight decode, wgmma order, epilogue arithmetic and exact fix-up of moe_fp8_rows.h: the
// output is v29's bit for bit), measured in docs/perf.md, section "moe_mxfp4 v30", as copies of those kernels that
// now live in moe_fp8r::mainloop (LoopDist) and moe_fp8r::swiglu_requant / token_codes:
//  - The copies run STAGES - 2 stages ahead instead of STAGES - 1: the slot written during stage ks is stage ks - 2's,
//    whose wgmma groups every warp has retired once it passed stage ks - 1's last wait_group(1), so the stage barrier
//    needs no wait_group(0) (moe_fp8r drains the tensor unit there). 4 stages of 4 k-blocks (148 KB; 5 stages with
//    the drain in v29).
//  - gate_up's SwiGLU / requantization epilogue and the prologue's hidden-state quantizer round to e2m1 without branches
//    (numerics::f32_to_e2m1_ties_away_branchless: the same codes as f32_to_e2m1_ties_away for every float): the rounding
//    ladder's divergent branches were the largest cost of gate_up's epilogue (19% of its stall samples); every fp8
//    path has it now.
// Tried and not kept (docs/perf.md, section "moe_mxfp4 v30"): 2 or 3 wgmma groups in flight (ptxas serializes the
// wgmmas, C7513, while any copy of the k-blocks is conditional, behind a branch or a predicate; session 26's v90 made
// them unconditional and measured three groups in flight +12..+26% with spills, +6..+12% without: code in commit
// 8b7cbd5), split copy roles (activations by one half of the threads, weights by the other), the next
// k-block's weight words or the copies before the wgmmas, 6 stages, no proxy fence (measurement only).
#pragma once
#include "problems/common/moe_fp8_rows2.h"

namespace moe_ws30 {
namespace {

#if defined(MOE_WG8_HOST)
// moe_fp8r2::Cfg (two decoded A buffers: one wgmma group in flight while the next k-block decodes) with the copies
// STAGES - 2 stages ahead: moe_fp8r::mainloop then needs no wgmma drain at the stage barriers (its LoopDist).
template <int WM, int MT, int KS, int STAGES, bool PF, int BN>
struct Cfg : moe_fp8r2::Cfg<WM, MT, KS, STAGES, 2, PF, BN> {
  static constexpr int DIST = STAGES - 2;
};

// The path as one unit for a composed variant: moe_fp8r2's (the shapes of moe_fp8r2::Path, the OVL + PRO launch
// chain) on this configuration; a forced fix-up (FORCE, test only) runs without the prologue launch, whose quantizer
// does not force, as moe_fp8r2 requires.
template <class A, class B, int FORCE = 0, int NS = 0>
using PathOf = moe_fp8r2::PathOf<A, B, true, FORCE == 0, FORCE, NS>;
// 8 warps x two 16-row groups (256 weight rows) x tiles of up to 160 rows, 4 k-blocks a stage, 4 stages (148 KB; 5 stages
// measured the same at d_expert 2048 and 1% slower at 512), the weight words one k-block ahead (v29's G160s otherwise).
using G160w = Cfg<8, 2, 4, 4, true, 160>;
using Path = PathOf<G160w, G160w>;
// v82 (session 22): the down with the tile's activations resident in shared memory (moe_fp8r2::down_xr, d_expert <=
// 512: 80 KB at 160 rows), NS column blocks of 256 rows a block; G160w's down elsewhere.
using G160xr = moe_fp8r2::XResCfg<G160w, 16>;
template <int NS, int FORCE = 0>
using PathXR = PathOf<G160w, G160xr, FORCE, NS>;
#endif  // MOE_WG8_HOST

}  // namespace
}  // namespace moe_ws30
