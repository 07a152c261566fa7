// v17: v16 with the large shapes (batch * kv > 65536 tokens) on the MXFP4 KV (kv_mxfp4 + kv_mxfp4_scale,
// 306 bytes a token instead of fp8's 576): v13/v15's dimension-sliced persistent tile with an integer
// e2m1 -> f16 decode and one HMUL2 by the block scale per element pair (problems/common/mla_fp4_dims.h).
// Scale bytes outside the exact range of that decode (104..128) are detected and the item is computed
// again by an exact fp32 path; arguments the fast kernel cannot take (unaligned MXFP4 tensors, a scale
// row stride above 32, kv_len not a multiple of 64) run v15's fp8 paths instead. batch * kv <= 65536
// tokens: v16's dims-cluster fp8 path, unchanged. Measured (docs/perf.md, section "mla_decode v17"): correct, but
// SLOWER than
// v16 on the four large shapes (+10% to +17%: the MXFP4 decode costs more issue slots than the halved KV
// bytes save, the dims tile being instruction/latency-bound on the H200). Test variants at the bottom
// (slow, for test mode) force the exact fallback three ways.
// AMD builds run v6's kernel, as v8, v11-v16 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_paths.h"
#include "problems/common/mla_fp8_dims_cluster.h"
#include "problems/common/mla_fp4_dims.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
// v15's paths, as v15.hip runs them (its final options).
using V15 = mla_paths::ClusterOrDims<mla_dims::kOptFlag | mla_dims::kOptRope,
                                     mla_cluster::kOptRelaxedArrive | mla_cluster::kOptQFirst>;
constexpr mla_cluster::MergeCost kMergeCost{48, 8};  // v16's

// SMALL: batch * kv_len up to which v16's dims-cluster fp8 path runs; S: ring stages of the MXFP4
// kernel; FB: every item through the exact fallback (a test of that path).
template <int64_t SMALL, int S, bool FB, uint32_t LO = mla_fp4::kScaleLo, bool MIX = false>
struct V17 {
  using F = mla_dims_cluster::Family<2, true>;
  using Fp4 = mla_fp4::Fp4Dims<S, FB, 0, true, LO, MIX>;
  static mla_dims_cluster::Pick pick(const MlaDecodeConfig& c) {
    if (int64_t(c.batch_size) * c.kv_seq_len > SMALL) return {};
    return F::pick(c, kMergeCost);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) {
    const mla_dims_cluster::Pick p = pick(c);
    if (p.c) return F::workspace_bytes(p, c);
    return std::max(Fp4::workspace_bytes(c), V15::workspace_bytes(c));
  }
  static void launch(const MlaDecodeArgs& a) {
    const mla_dims_cluster::Pick p = pick(a.cfg);
    if (p.c)
      F::launch(p, a);
    else if (Fp4::usable(a))
      Fp4::launch(a, "mla_fp4_dims_kernel");
    else
      V15::launch(a);
  }
};
using Final = V17<65536, 5, false>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Final::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Final::launch(a); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v17", gpu,
                   "v16 with batch * kv > 65536 on the MXFP4 KV: v15's dims tile, integer e2m1 -> f16 decode, one "
                   "HMUL2 by the block scale; out-of-range scales recomputed exactly; v16's fp8 cluster path below. "
                   "SLOWER than v16 on the H200 (+10-17% on the large shapes: the decode costs more than the bytes save)",
                   "q,kv_fp8,kv_fp8_scale,kv_mxfp4,kv_mxfp4_scale,kv_indptr", 0);

#if !defined(__HIP_PLATFORM_AMD__)
namespace v17_det {
using C = V17<0, 5, false, 126>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return C::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { C::launch(a); }
MLA_DECODE_VARIANT("v17det", gpu,
                   "test (slow): v17's MXFP4 kernel with the exact range narrowed to scale bytes 126..128, so the "
                   "detection sends (almost) every item to the exact fallback after its tiles",
                   "q,kv_mxfp4,kv_mxfp4_scale,kv_indptr", ::harness::kVariantCheckOnly);
}  // namespace v17_det
namespace v17_mix {
using C = V17<0, 5, false, mla_fp4::kScaleLo, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return C::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { C::launch(a); }
MLA_DECODE_VARIANT("v17mix", gpu,
                   "test (slow): v17's MXFP4 kernel with every odd item recomputed by the exact fallback after its tiles",
                   "q,kv_mxfp4,kv_mxfp4_scale,kv_indptr", ::harness::kVariantCheckOnly);
}  // namespace v17_mix
namespace v17_fb {
using C = V17<0, 5, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return C::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { C::launch(a); }
MLA_DECODE_VARIANT("v17fb", gpu, "test (slow): v17's MXFP4 kernel with every item through the exact fallback, no tiles",
                   "q,kv_mxfp4,kv_mxfp4_scale,kv_indptr", ::harness::kVariantCheckOnly);
}  // namespace v17_fb
#endif
