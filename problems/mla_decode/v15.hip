// v15: v14 (v12's one-launch cluster kernels where batch * kv_len <= 32768 tokens, v13's dimension-sliced
// persistent kernel elsewhere) plus the cheap items of both kernels' "next steps" (docs/perf.md), as
// template options of the shared headers (0 = the kernels v12 / v13 / v14 run):
//   cluster kernel (problems/common/mla_fp8_cluster.h): the second cluster arrive (after the merge's
//     distributed-shared-memory reads) without a release fence; Q converted before kv_indptr is checked;
//   dims kernel (problems/common/mla_fp8_dims.h): rope in k16 steps (warp dw: 32 rope dims of one
//     16-token m tile, LDS.64 rows: 8 shared wavefronts a warp and tile instead of 32, 4 k16 mma
//     instead of 8 k8); the rescale flag in shared memory instead of __syncthreads_or.
// AMD builds run v6's kernel, as v8, v11-v14 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dims.h"
#include "problems/common/mla_fp8_cluster.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
constexpr int64_t kClusterTokens = 32768;  // batch * kv_len up to which the cluster path runs (v14's)

// DOPT: mla_dims::kOpt* bits, COPT: mla_cluster::kOpt* bits.
template <int DOPT, int COPT>
struct V15 {
  using DimsK = mla_dims::Dims<5, true, DOPT>;
  using B16 = mla_cluster::Fused<8, 2, 16, 2, false, COPT>;
  using A = mla_cluster::Fused<4, 2, 8, 3, false, COPT>;
  // v14's choice (mla_cluster::choose_small) on these kernels.
  static mla_cluster::SmallChoice pick(const MlaDecodeConfig& c) {
    if (int64_t(c.batch_size) * c.kv_seq_len > kClusterTokens) return {};
    const mla_cluster::ClusterPlan p16 = B16::plan(c);
    if (p16.ok() && p16.nclus == 1 && p16.waves == 1 && p16.tokens_per_split <= 64)
      return {mla_cluster::SmallChoice::b16, p16};
    const mla_cluster::ClusterPlan pa = A::plan(c);
    if (pa.ok()) return {mla_cluster::SmallChoice::a, pa};
    return {};
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) {
    const mla_cluster::SmallChoice ch = pick(c);
    switch (ch.kind) {
      case mla_cluster::SmallChoice::b16: return B16::workspace_bytes(ch.plan, c);
      case mla_cluster::SmallChoice::a: return A::workspace_bytes(ch.plan, c);
      default: return DimsK::workspace_bytes(c);
    }
  }
  static void launch(const MlaDecodeArgs& a) {
    const mla_cluster::SmallChoice ch = pick(a.cfg);
    switch (ch.kind) {
      case mla_cluster::SmallChoice::b16: B16::launch(a, ch.plan, "mla_fp8_cluster_kernel<8, 2, 16, 2, opt>"); break;
      case mla_cluster::SmallChoice::a: A::launch(a, ch.plan, "mla_fp8_cluster_kernel<4, 2, 8, 3, opt>"); break;
      default: DimsK::launch(a, "mla_fp8_dims_kernel<5, persistent, opt>"); break;
    }
  }
};
// Measured in call 1 as "v15r" (docs/perf-mla-v15.md).
using Final = V15<mla_dims::kOptFlag | mla_dims::kOptRope, mla_cluster::kOptRelaxedArrive | mla_cluster::kOptQFirst>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Final::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Final::launch(a); }

#endif

}  // namespace

MLA_DECODE_VARIANT("v15", gpu,
                   "v14 + cluster kernel: relaxed second cluster arrive, Q before the kv_indptr check; dims kernel: "
                   "rope in k16 steps (fewer shared-memory bank conflicts), shared-memory rescale flag",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
