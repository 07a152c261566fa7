// v21: v19's small-shape path and v20's large-shape path in one variant.
//   - batch * kv_len <= 65536 (bs 4 / kv 1024 and 8192, bs 32 / kv 1024, bs 64 / kv 1024): v19's dims-cluster
//     kernel on v18's tile (problems/common/mla_fp8_dcl2.h; the push epilogue where a batch is one cluster);
//   - above: v20's dims3 kernel (problems/common/mla_fp8_dims3.h: f16 partial logits, the next item's Q
//     bulk-copied ahead, evict_first KV copies, v18's combine kernel for split shapes).
// Both paths exactly as v19.hip and v20.hip configure them (docs/perf.md, sections "mla_decode v19" and
// "mla_decode v20"). AMD builds run v6's kernel, as v8, v11-v20 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dcl2.h"
#include "problems/common/mla_fp8_dims3.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
using Small = mla_dcl2::SmallPath<2, 3, mla_dcl2::kPush | mla_dcl2::kFence1, 0>;  // v19's Final
using Large = mla_dims3::Dims3<3, mla_dims3::kF16P | mla_dims3::kQP | mla_dims3::kEF, 2>;  // v20's Final
size_t workspace_bytes(const MlaDecodeConfig& c) {
  return Small::applies(c) ? Small::workspace_bytes(c) : Large::workspace_bytes(c);
}
void launch(const MlaDecodeArgs& a) {
  if (Small::applies(a.cfg))
    Small::launch(a);
  else
    Large::launch(a);
}
#endif

}  // namespace

MLA_DECODE_VARIANT("v21", gpu, "v19's small-shape path (batch * kv <= 65536) + v20's large-shape path",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
