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
#include "problems/common/mla_fp8_paths.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
// Measured in call 1 as "v15r" (docs/perf.md, section "mla_decode v15").
using Final = mla_paths::ClusterOrDims<mla_dims::kOptFlag | mla_dims::kOptRope,
                                       mla_cluster::kOptRelaxedArrive | mla_cluster::kOptQFirst>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Final::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Final::launch(a); }

#endif

}  // namespace

MLA_DECODE_VARIANT("v15", gpu,
                   "v14 + cluster kernel: relaxed second cluster arrive, Q before the kv_indptr check; dims kernel: "
                   "rope in k16 steps (fewer shared-memory bank conflicts), shared-memory rescale flag",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
