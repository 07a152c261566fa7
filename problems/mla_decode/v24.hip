// v24 (mla-large3): v23 with a new path on the two large shapes with 32 tiles a block (65536 < batch * kv_len
// <= 262144; H200: bs 32 / kv 8192 and bs 256 / kv 1024):
//   - batch * kv_len <= 65536: v22's small path exactly (mla_dcl2::SmallPath, same options);
//   - split plans where every batch gets a cluster slot (H200: bs 64 / kv 8192): v23's mla_dims4::ClusterPath;
//   - the 32-tile shapes: mla_dims5::DirPath (v22's persistent plan and tile; the output, or the split partials,
//     written straight from the P V accumulators with one barrier; bs 32 / kv 8192's 4 splits merged in the
//     kernel: cooperative launch, each split block merges a quarter of the heads from the partials in L2);
//   - the other large shapes: v22's large path exactly (mla_dims3::Dims3<3, F16P | QP | EF, 2>).
// Measurements: docs/perf.md, section "mla_decode v24".
// AMD builds run v6's kernel, as v8, v11-v23 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dcl2.h"
#include "problems/common/mla_fp8_dims3.h"
#include "problems/common/mla_fp8_dims4.h"
#include "problems/common/mla_fp8_dims5.h"

#ifndef MLA_F16_PARTIALS  // v25 / v26.hip include this file with their options and register themselves
#define MLA_F16_PARTIALS false
#define MLA_V24_SELF 1
#endif
#ifndef MLA_V24_S  // the KV ring stages of the 32-tile shapes' path (v26: 2)
#define MLA_V24_S 3
#endif
#ifndef MLA_V24_S_CL  // the clustered split shape's (H200: bs 64 / kv 8192) ring stages (v26: 2)
#define MLA_V24_S_CL 3
#endif
#ifndef MLA_V24_XF  // further flags of the 32-tile path's merging launch (v26: mla_dims5::fLf)
#define MLA_V24_XF 0
#endif
#ifndef MLA_V24_OPT1_X  // further flags of the small path's one-cluster-a-batch kernels (v35: mla_dcl2::kLean)
#define MLA_V24_OPT1_X 0
#endif
#ifndef MLA_V24_LARGE_X  // further flags of the large shapes' three paths (v35: mla_dims3::kLean)
#define MLA_V24_LARGE_X 0
#endif
#ifndef MLA_V24_OPTN_X  // further flags of the small path's several-clusters-a-batch kernels (v32: mla_dcl2::kFence1)
#define MLA_V24_OPTN_X 0
#endif

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
namespace d = mla_dcl2;
// one cluster a batch:
constexpr int kOpt1 = d::kPush | d::kFence1 | d::kEF | d::kF16P | d::kPush16 | d::kWPar | MLA_V24_OPT1_X;
constexpr int kOptN = d::kEF | d::kF16P | MLA_V24_OPTN_X;  // several: v16's pull epilogue (as v22)
using Small = d::SmallPath<2, 3, kOpt1, kOptN>;
using Clustered =  // v23's
    mla_dims4::ClusterPath<MLA_V24_S_CL, mla_dims4::kF16P | mla_dims4::kQP | mla_dims4::kEF | MLA_V24_LARGE_X, 2>;
using Direct = mla_dims5::DirPath<MLA_V24_S, mla_dims5::kF16P | mla_dims5::kQP | mla_dims5::kEF | MLA_V24_LARGE_X, 2, true,
                                  MLA_F16_PARTIALS, MLA_V24_XF>;
using Large = mla_dims3::Dims3<3, mla_dims3::kF16P | mla_dims3::kQP | mla_dims3::kEF | MLA_V24_LARGE_X, 2>;  // v22's
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

#if defined(MLA_V24_SELF)
MLA_DECODE_VARIANT("v24", gpu,
                   "v23 + the 32-tile large shapes (bs 32 / kv 8192, bs 256 / kv 1024) with the output or the split "
                   "partials written straight from the accumulators, bs 32 / kv 8192's splits merged in the kernel",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
#endif
