// v20: v18 with a dims tile of less shared-memory (MIO) work on the shapes above batch * kv_len = 65536
// tokens (bs 32 / kv 8192, bs 64 / kv 8192, bs 256 / kv 1024 and 8192): problems/common/mla_fp8_dims3.h
// (Dims3<3, F16P | QP | EF>: f16 partial logits, Q of the next item bulk-copied into shared memory, KV copies
// with an L2 evict_first policy; v18's combine kernel for the split shapes). Smaller shapes: v18's path, i.e.
// v16's dims-cluster kernels, unchanged.
// Measurements: docs/perf.md, section "mla_decode v20". AMD builds run v6's kernel, as v8, v11-v18 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dims_cluster.h"
#include "problems/common/mla_fp8_dims3.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
// v18's path below 65536 tokens: v16's dims-cluster family and merge cost (problems/mla_decode/v18.hip).
constexpr mla_cluster::MergeCost kMergeCost{48, 8};
using Small = mla_dims_cluster::Family<2, true>;

// Large: the dims3 path (applies / workspace_bytes / launch).
template <class Large>
struct V20 {
  static mla_dims_cluster::Pick pick(const MlaDecodeConfig& c) {
    if (Large::applies(c)) return {};
    return Small::pick(c, kMergeCost);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) {
    const mla_dims_cluster::Pick p = pick(c);
    return p.c ? Small::workspace_bytes(p, c) : Large::workspace_bytes(c);
  }
  static void launch(const MlaDecodeArgs& a) {
    const mla_dims_cluster::Pick p = pick(a.cfg);
    if (p.c)
      Small::launch(p, a);
    else
      Large::launch(a);
  }
};
// Measured as "v20h" in call 3 (docs/perf.md, section "mla_decode v20"; the same options as call 2's "v20"): f16 partial logits,
// the Q bulk copy, evict_first KV copies; the in-kernel merge (MG) and the kv_indptr table (SP) measured no better.
using Final = V20<mla_dims3::Dims3<3, mla_dims3::kF16P | mla_dims3::kQP | mla_dims3::kEF, 2>>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Final::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Final::launch(a); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v20", gpu,
                   "v18 + for batch * kv > 65536 a tile with half the shared-memory round trip (f16 partial logits), "
                   "next item's Q bulk-copied ahead, KV copies L2 evict_first",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
