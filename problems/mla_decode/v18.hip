// v18: v16 with a leaner dims tile on the shapes above batch * kv_len = 65536 tokens (bs 32 / kv 8192,
// bs 64 / kv 8192, bs 256 / kv 1024 and 8192): problems/common/mla_fp8_dims2.h (v15's persistent
// kernel; the tile without the predicated rope / denominator mma, the partial-logit packing moves,
// the shifts before the e4m3 conversions and the exp2 range fix-ups; P^T through ldmatrix.trans; the
// denominator summed in fp32 by the reducing lanes; Q K^T over the four m tiles interleaved; the MOVMs
// half after the reduction's loads, half in P V; 3-stage ring; swizzled O staging). Configuration as
// measured in docs/perf.md, section "mla_decode v18" (call 4's "v18m3"). Smaller shapes: v16's dims-cluster path,
// unchanged.
// AMD builds run v6's kernel, as v8, v11-v16 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dims_cluster.h"
#include "problems/common/mla_fp8_dims2.h"


namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
// v16's cluster path and its merge cost (docs/perf.md, section "mla_decode v16").
constexpr mla_cluster::MergeCost kMergeCost{48, 8};

// SMALL: batch * kv_len up to which v16's dims-cluster path runs; S ring stages; MV: where the MOVMs run
// (problems/common/mla_fp8_dims2.h).
template <int64_t SMALL, int S, int MV>
struct V18 {
  using F = mla_dims_cluster::Family<2, true>;  // v16's configuration
  using D = mla_dims2::Dims2<S, MV>;
  static mla_dims_cluster::Pick pick(const MlaDecodeConfig& c) {
    if (int64_t(c.batch_size) * c.kv_seq_len > SMALL) return {};
    return F::pick(c, kMergeCost);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) {
    const mla_dims_cluster::Pick p = pick(c);
    return p.c ? F::workspace_bytes(p, c) : D::workspace_bytes(c);
  }
  static void launch(const MlaDecodeArgs& a) {
    const mla_dims_cluster::Pick p = pick(a.cfg);
    if (p.c)
      F::launch(p, a);
    else
      D::launch(a, "mla_fp8_dims2_kernel");
  }
};
// Measured as "v18m3" in call 4 (docs/perf.md, section "mla_decode v18").
using Final = V18<65536, 3, 3>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Final::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Final::launch(a); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v18", gpu,
                   "v16 + a leaner dims tile for batch * kv > 65536: m tiles interleaved, half the MOVMs moved into the "
                   "reduction, half into P V (off the MIO-bound Q K^T phase), 3-stage ring, swizzled O staging",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);

#if !defined(__HIP_PLATFORM_AMD__)
#define MLA_V18_VARIANT(NS, NAME, C_, DESC)                                                     \
  namespace NS {                                                                                 \
  using C = C_;                                                                                  \
  size_t workspace_bytes(const MlaDecodeConfig& c) { return C::workspace_bytes(c); }            \
  void launch(const MlaDecodeArgs& a) { C::launch(a); }                                          \
  MLA_DECODE_VARIANT(NAME, gpu, DESC, "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);                     \
  }
using V18All = V18<0, 3, 0>;
using V18M0 = V18<65536, 3, 0>;
using V18R2 = V18<65536, 2, 0>;
using V18M1 = V18<65536, 3, 1>;
using V18M2 = V18<65536, 3, 2>;
MLA_V18_VARIANT(v18_all, "v18all", V18All, "test: v18m0's dims kernel on every shape")
MLA_V18_VARIANT(v18_m0, "v18m0", V18M0, "measurement: v18 with the MOVMs in Q K^T (call 4's v18)")
MLA_V18_VARIANT(v18_r2, "v18r2", V18R2, "measurement: v18m0 with a 2-stage ring")
MLA_V18_VARIANT(v18_m1, "v18m1", V18M1, "measurement: v18 with the MOVMs after the reduction's loads")
MLA_V18_VARIANT(v18_m2, "v18m2", V18M2, "measurement: v18 with the MOVMs in P V")
#endif
