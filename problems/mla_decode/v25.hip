// v25 (mla-large4): v24 with a new path on the split shape with 32 tiles a block (H200: bs 32 / kv 8192, 32 batches x
// 4 splits, one item a block, merged in the kernel):
//   - mla_dims6::SplitPath6 (fMg | fHp | fQn): v24's mla_dims5::DirPath kernel copied, with the split partials
//     stored as f16 (16 KB a block instead of 32 KB of f32) and the in-kernel merge loading f16 quads (half the
//     bytes); fQn (the next item's Q fragments built before the epilogue) has no effect with one item a block;
//   - every other shape: v24's paths exactly (bs 256 / kv 1024 keeps mla_dims5::DirPath: v25's kernel measured no
//     gain there).
// Measurements: docs/perf-mla-large4.md (to be merged into docs/perf.md, section "mla_decode v25").
// AMD builds run v6's kernel, as v8, v11-v24 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dcl2.h"
#include "problems/common/mla_fp8_dims3.h"
#include "problems/common/mla_fp8_dims4.h"
#include "problems/common/mla_fp8_dims5.h"
#include "problems/common/mla_fp8_dims6.h"

#ifndef MLA_V25_F  // v25t.hip includes this file with the timeline flag (fTs) added and registers itself
#define MLA_V25_F (mla_dims6::fMg | mla_dims6::fHp | mla_dims6::fQn)
#define MLA_V25_SELF 1
#endif

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
using Clustered = mla_dims4::ClusterPath<3, mla_dims4::kF16P | mla_dims4::kQP | mla_dims4::kEF, 2>;  // v23's
using Split = mla_dims6::SplitPath6<3, mla_dims6::kF16P | mla_dims6::kQP | mla_dims6::kEF, 2, MLA_V25_F>;  // new
using Direct = mla_dims5::DirPath<3, mla_dims5::kF16P | mla_dims5::kQP | mla_dims5::kEF, 2, true>;  // v24's
using Large = mla_dims3::Dims3<3, mla_dims3::kF16P | mla_dims3::kQP | mla_dims3::kEF, 2>;  // v22's
int pick(const MlaDecodeConfig& c) {
  if (Small::applies(c)) return 0;
  if (Clustered::applies(c)) return 1;
  if (Split::applies(c)) return 4;
  if (Direct::applies(c)) return 2;
  return 3;
}
size_t workspace_bytes(const MlaDecodeConfig& c) {
  switch (pick(c)) {
    case 0: return Small::workspace_bytes(c);
    case 1: return Clustered::workspace_bytes(c);
    case 2: return Direct::workspace_bytes(c);
    case 4: return Split::workspace_bytes(c);
    default: return Large::workspace_bytes(c);
  }
}
void launch(const MlaDecodeArgs& a) {
  switch (pick(a.cfg)) {
    case 0: Small::launch(a); break;
    case 1: Clustered::launch(a); break;
    case 2: Direct::launch(a); break;
    case 4: Split::launch(a); break;
    default: Large::launch(a); break;
  }
}
#endif

}  // namespace

#if defined(MLA_V25_SELF)
MLA_DECODE_VARIANT("v25", gpu,
                   "v24 + bs 32 / kv 8192's split partials stored as f16 (half the bytes written and merged in the kernel)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
#endif
