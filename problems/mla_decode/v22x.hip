// Measurement variants of v22 (mla-small2, docs/perf.md, section "mla_decode v22"): v22's small path with one option
// changed; large shapes as v21 / v22 (v20's dims3 path). Only the small shapes are timed with them.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dcl2.h"
#include "problems/common/mla_fp8_dims3.h"

#if !defined(__HIP_PLATFORM_AMD__)
namespace {
namespace d = mla_dcl2;
template <class Small>
struct V22 {
  using Large = mla_dims3::Dims3<3, mla_dims3::kF16P | mla_dims3::kQP | mla_dims3::kEF, 2>;
  static size_t workspace_bytes(const MlaDecodeConfig& c) {
    return Small::applies(c) ? Small::workspace_bytes(c) : Large::workspace_bytes(c);
  }
  static void launch(const MlaDecodeArgs& a) {
    if (Small::applies(a.cfg))
      Small::launch(a);
    else
      Large::launch(a);
  }
};
constexpr int kOpt1 = d::kPush | d::kFence1 | d::kEF | d::kF16P | d::kPush16 | d::kWPar;  // as v22
constexpr int kOptN = d::kEF | d::kF16P;                                                  // as v22
using F = V22<d::SmallPath<2, 3, kOpt1, kOptN | d::kFence1>>;
using T = V22<d::SmallPath<2, 3, kOpt1 | d::kTs, kOptN | d::kTs>>;
}  // namespace
#define MLA_V22_VARIANT(NS, NAME, C_, DESC)                                                     \
  namespace NS {                                                                                 \
  using C = C_;                                                                                  \
  size_t workspace_bytes(const MlaDecodeConfig& c) { return C::workspace_bytes(c); }            \
  void launch(const MlaDecodeArgs& a) { C::launch(a); }                                          \
  MLA_DECODE_VARIANT(NAME, gpu, DESC, "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);                     \
  }
MLA_V22_VARIANT(v22_f, "v22f", F,
                "measurement: v22 with one thread's fences around the pull epilogue's cross-cluster counter")
MLA_V22_VARIANT(v22_ts, "v22ts", T,
                "measurement: v22 with the per-block timeline (env MLA_V19_TS=N prints call N's; run in test mode)")
#endif
