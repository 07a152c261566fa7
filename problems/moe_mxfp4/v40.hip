// v40 (session 10, helper moe-r8e): v38 with the 8-row shapes (E257 bs16 / bs128, E33 bs16) on moe_r8e::Path<>: moe_r8d's
// chain with the gate_up grid bounded by the routing structure (TB2) and the down kernel held to 160 registers
// (__maxnreg__), so that two down blocks fit an SM next to two gate_up blocks while the down fills gate_up's last
// wave (168 registers: one). Same kernels' arithmetic: v38's outputs (docs/perf-moe-r8e.md).
// Every other shape as v38 (v37.hip's dispatch lines, v38's macros). Builds without mma.sync (AMD) run v11's dispatch.
#define MOE_Y_BF16 1
#define MOE_Y_BF16_CVT 1
#define MOE_Y_BF16X2 1
#include "problems/common/moe_dispatch.h"
#include "problems/common/moe_r8d.h"
#include "problems/common/moe_r8e.h"
#include "problems/common/moe_w32.h"
#include "problems/common/moe_ws30.h"

#ifndef V40_PATH  // measurement variants (v40a.hip, ...) include this file with their own 8-row path
#define V40_PATH moe_r8e::Path<>
#define V40_SELF 1
#endif

#if defined(MOE_WG8_HOST)
namespace moe_v40 {  // named: a kernel argument type in the file's unnamed namespace confuses nvcc's stub
// v37's G27d: moe_wide27's 32-row configuration with the copy distance of moe_fp8r::LoopDist.
struct G27d : moe_w32::G27 {
  static constexpr int DIST = moe_w32::G27::STAGES - 2;
};
}  // namespace moe_v40
#endif

namespace {
#if defined(MOE_WG8_HOST)
using namespace moe_dispatch;
using moe_v40::G27d;
// v37's 32-row path (moe_w32::Path's plans with G27d's gate_up) and 64-row path.
using Path32 = moe_w32::PathOf<moe_w32::Plan<G27d, moe_w32::G27, 1, 4, 0, 0, 256>,
                               moe_w32::Plan<G27d, moe_w32::G27, 2, 2, 0, 0, 1024>>;
using Paths = Dispatch<Or<V40_PATH, Or<moe_r8d::Path<>, Or<moe_rows8x::Rows8XPath<>, V20Rows8>>>,
                       Or<Path32, moe_wide22::Path32>, Or<moe_ws30::Path, V20Rows64>>;
#else
using Paths = moe_dispatch::Dispatch<void, void, void>;  // AMD: v11's dispatch
#endif
size_t workspace_bytes(const MoeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MoeArgs& a) { Paths::launch(a); }
}  // namespace

#if defined(V40_SELF)
MOE_MXFP4_VARIANT("v40", gpu,
                  "v38 with the 8-row gate_up grid bounded by the routing structure and the down at 160 registers "
                  "(moe_r8e.h)",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#endif
