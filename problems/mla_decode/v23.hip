// v23 (mla-large2): v22 with the large path's 2-split plan merged in clusters:
//   - batch * kv_len <= 65536: v22's small path exactly (mla_dcl2::SmallPath, same options);
//   - split plans that run as clusters (mla_dims4::ClusterPath: 2 or 4 splits, one item a block, a cluster slot
//     for every batch; on the H200 bs 64 / kv 8192, 64 x 2): v20's dims tile in mla_dims4's kernel, each
//     batch's splits one cluster that merges through distributed shared memory (no partials, no combine
//     kernel). bs 32 / kv 8192 (32 x 4) would need 32 clusters of 4 and the H200 offers 30;
//   - the other large shapes: v22's large path exactly (mla_dims3::Dims3<3, F16P | QP | EF, 2>).
// Measurements: docs/perf.md, section "mla_decode v23". AMD builds run v6's kernel, as v8, v11-v22 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dcl2.h"
#include "problems/common/mla_fp8_dims3.h"
#include "problems/common/mla_fp8_dims4.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
namespace d = mla_dcl2;
constexpr int kOpt1 = d::kPush | d::kFence1 | d::kEF | d::kF16P | d::kPush16 | d::kWPar;  // one cluster a batch
constexpr int kOptN = d::kEF | d::kF16P;  // several: v16's pull epilogue (as v22)
using Small = d::SmallPath<2, 3, kOpt1, kOptN>;
using Clustered = mla_dims4::ClusterPath<3, mla_dims4::kF16P | mla_dims4::kQP | mla_dims4::kEF, 2>;
using Large = mla_dims3::Dims3<3, mla_dims3::kF16P | mla_dims3::kQP | mla_dims3::kEF, 2>;  // v22's
size_t workspace_bytes(const MlaDecodeConfig& c) {
  if (Small::applies(c)) return Small::workspace_bytes(c);
  if (Clustered::applies(c)) return Clustered::workspace_bytes(c);
  return Large::workspace_bytes(c);
}
void launch(const MlaDecodeArgs& a) {
  if (Small::applies(a.cfg))
    Small::launch(a);
  else if (Clustered::applies(a.cfg))
    Clustered::launch(a);
  else
    Large::launch(a);
}
#endif

}  // namespace

MLA_DECODE_VARIANT("v23", gpu,
                   "v22 + split plans merged in thread-block clusters through distributed shared memory (no "
                   "combine kernel) where every batch gets a cluster slot (bs 64 / kv 8192)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
