// v42s (session 11, diagnostic): v42 with statistics of the recomputed values (moe_fp8r::near_stats) printed after
// each call: how far the fp8 sums' SwiGLU values are from the exact ones, how far from a midpoint an exact value was
// whose bf16 rounding the fp8 value got wrong, how many values a tile and how many clock cycles the pass costs.
// Test mode only (the report is a kernel launch and a device printf after each call). docs/perf.md, section "moe_mxfp4
// v42", has its measurements; its first form (1u << 14, 0.0f below) measured the fp8 sums' errors.
#define MOE_NEAR_BAND (1u << 12)
#define MOE_NEAR_MIN_STEP 0.02f
#define MOE_NEAR_STATS 1
#define MOE_Y_BF16X2 1
#define V37_FORCE 0  // v37.hip without its own registration
#include "problems/moe_mxfp4/v37.hip"
#include "problems/common/launch_check.h"

#if defined(MOE_WG8_HOST)
namespace moe_v42s {  // named: nvcc's stub for a kernel of the file's unnamed namespace is ambiguous here
static __global__ void near_stats_report() {  // static: internal linkage (tests/test_kernel_linkage.cpp)
  unsigned long long* st = moe_fp8r::near_stats;
  printf("NEARSTATS entries %llu bf16_flips %llu max_flip_distance %llu over_cap %llu tiles %llu with_entries %llu "
         "cycles_first %llu cycles_rest %llu rel_hist(2^-40..):", st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7]);
  for (int b = 0; b < 48; ++b) printf(" %llu", st[8 + b]);
  printf(" requant_loop_thread0 %llu / %llu dots %llu", st[56], st[57], st[58]);
  printf("\n");
  for (int i = 0; i < 64; ++i) st[i] = 0;
}
}  // namespace moe_v42s
#endif

namespace {
#if defined(MOE_WG8_HOST)
void launch_with_stats(const MoeArgs& a) {
  launch(a);
  moe_v42s::near_stats_report<<<1, 1>>>();
  harness_check_launch("near_stats_report");
}
#else
void launch_with_stats(const MoeArgs& a) { launch(a); }
#endif
}  // namespace

#define launch launch_with_stats
MOE_MXFP4_VARIANT("v42s", gpu,
                  "diagnostic: v42 with statistics printed after each call",
                  "hidden_states,gate_up_weight,down_weight,gate_up_weight_shuffled,down_weight_shuffled,"
                  "gate_up_weight_scale,down_weight_scale,topk_weights,topk_ids",
                  ::harness::kVariantMatrix8bit);
#undef launch
