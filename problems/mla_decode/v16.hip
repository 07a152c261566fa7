// v16: v15 plus, for batch * kv_len <= 65536 tokens (bs 4 / kv 1024 and 8192, bs 32 / kv 1024, bs 64 /
// kv 1024), v13's dimension-sliced tile (one fp8 -> f16 conversion per byte, 8 dim warps, 64-token
// tiles, one bulk copy a tile) in v12's one-launch cluster form (problems/common/mla_fp8_dims_cluster.h):
// the splits of a batch form thread-block clusters of 2-16 blocks (one block per SM) that merge their
// partials through distributed shared memory, and several clusters of a batch merge through the
// workspace and a counter (no combine kernel). Configuration as measured (docs/perf.md, section "mla_decode v16", call 5's
// "v16i"): 2-stage ring, copies issued before kv_indptr is read, the per-thread merge epilogue with
// MUFU division and acq_rel fences, plans from v12's cost model with a cross-cluster merge costing
// 48 + 8 k token rows (k clusters a batch). Larger shapes: v15's paths, unchanged.
// AMD builds run v6's kernel, as v8, v11-v15 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_paths.h"
#include "problems/common/mla_fp8_dims_cluster.h"


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

// A cross-cluster merge costs 48 + 8 k token rows (k clusters a batch). Measured against 48 (v12's
// model), 48 + 16 k and one cluster a batch in docs/perf.md, section "mla_decode v16" (call 3).
constexpr mla_cluster::MergeCost kMergeCost{48, 8};

// S ring stages, SPEC: copies before kv_indptr; the dims-cluster path for batch * kv_len <= 65536
// tokens, v15's paths above.
template <int S, bool SPEC>
struct V16 {
  static constexpr int64_t kMaxTokens = 65536;
  using F = mla_dims_cluster::Family<S, SPEC>;
  static mla_dims_cluster::Pick pick(const MlaDecodeConfig& c) {
    if (int64_t(c.batch_size) * c.kv_seq_len > kMaxTokens) return {};
    return F::pick(c, kMergeCost);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) {
    const mla_dims_cluster::Pick p = pick(c);
    return p.c ? F::workspace_bytes(p, c) : V15::workspace_bytes(c);
  }
  static void launch(const MlaDecodeArgs& a) {
    const mla_dims_cluster::Pick p = pick(a.cfg);
    if (p.c)
      F::launch(p, a);
    else
      V15::launch(a);
  }
};
// Measured as "v16i" in call 5 (docs/perf.md, section "mla_decode v16").
using Final = V16<2, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Final::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Final::launch(a); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v16", gpu,
                   "v15 + v13's dims tile in v12's cluster form (DSMEM merge, no combine kernel) for batch * kv <= 65536",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
