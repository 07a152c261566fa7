// v26 (mla-large5, session 10): v25 with
//   - the two 32-tile shapes (bs 32 / kv 8192: 4 splits merged in the kernel, f16 partials; bs 256 / kv 1024: one
//     split) on mla_dims5::DirPath with a V26_S-stage KV ring (v25: 3) and, for the merge, the flags V26_XF (fLf:
//     the merge's arrival fenced once by thread 0, grid-sync style);
//   - the clustered split shape (bs 64 / kv 8192) on v23's mla_dims4::ClusterPath with V26_S_CL stages (v25: 3);
//   - the other shapes on v24 / v25's paths exactly (mla_dcl2::SmallPath, mla_dims3::Dims3).
// Two stages: fewer KV bytes in flight, hence fewer of the cache flush's dirty L2 lines written back at the start
// (KV copies carry evict_first: later copies replace earlier KV lines, clean).
// Measurements: docs/perf-mla-large5.md. AMD builds run v6's kernel, as v8, v11-v25 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dcl2.h"
#include "problems/common/mla_fp8_dims3.h"
#include "problems/common/mla_fp8_dims4.h"
#include "problems/common/mla_fp8_dims5.h"

#ifndef V26_S  // a measurement file may include this one with other options (and registers itself)
#define V26_S 2              // the 32-tile shapes' KV ring stages (v25: 3)
#define V26_XF mla_dims5::fLf  // bs 32 / kv 8192's merge flags beyond v25's
#define V26_S_CL 2           // the clustered split shape's (H200: bs 64 / kv 8192) ring stages (v25: 3)
#define V26_SELF 1
#endif

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
namespace d = mla_dcl2;
constexpr int kOpt1 = d::kPush | d::kFence1 | d::kEF | d::kF16P | d::kPush16 | d::kWPar;  // as v24
constexpr int kOptN = d::kEF | d::kF16P;
using Small = d::SmallPath<2, 3, kOpt1, kOptN>;
using Clustered = mla_dims4::ClusterPath<V26_S_CL, mla_dims4::kF16P | mla_dims4::kQP | mla_dims4::kEF, 2>;  // v23's
using Direct = mla_dims5::DirPath<V26_S, mla_dims5::kF16P | mla_dims5::kQP | mla_dims5::kEF, 2, true, true, V26_XF>;
using Large = mla_dims3::Dims3<3, mla_dims3::kF16P | mla_dims3::kQP | mla_dims3::kEF, 2>;  // v22's
int pick(const MlaDecodeConfig& c) {
  if (Small::applies(c)) return 0;
  if (Clustered::applies(c)) return 1;
  if (Direct::applies(c)) return 2;
  return 3;
}
size_t workspace_bytes(const MlaDecodeConfig& c) {
  switch (pick(c)) {
    case 0: return Small::workspace_bytes(c);
    case 1: return Clustered::workspace_bytes(c);
    case 2: return Direct::workspace_bytes(c);
    default: return Large::workspace_bytes(c);
  }
}
void launch(const MlaDecodeArgs& a) {
  switch (pick(a.cfg)) {
    case 0: Small::launch(a); break;
    case 1: Clustered::launch(a); break;
    case 2: Direct::launch(a); break;
    default: Large::launch(a); break;
  }
}
#endif

}  // namespace

#if defined(V26_SELF)
MLA_DECODE_VARIANT("v26", gpu,
                   "v25 with 2-stage KV rings on bs 32 / kv 8192, bs 256 / kv 1024 and bs 64 / kv 8192 (fewer of the "
                   "flush's dirty L2 lines written back) and bs 32 / kv 8192's merge arrival fenced once",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
#endif
