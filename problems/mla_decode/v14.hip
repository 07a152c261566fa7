// v14: v12's one-launch cluster kernels on the latency-bound shapes (batch * kv_len <= 32768 tokens:
// problems/common/mla_fp8_cluster.h, thread-block clusters merging their partials through distributed
// shared memory), v13's dimension-sliced persistent kernel elsewhere (problems/common/mla_fp8_dims.h:
// each fp8 byte converted once for K and V). The threshold is where each measured faster on the
// benchmark shapes (docs/perf.md, session 3): v12 on bs 4 / kv 1024 and 8192 and bs 32 / kv 1024,
// v13 from bs 64 / kv 1024 up.
// AMD builds run v6's kernel, as v8, v11, v12 and v13 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_paths.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
using Paths = mla_paths::ClusterOrDims<0, 0>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Paths::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Paths::launch(a); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v14", gpu,
                   "v12's one-launch cluster kernels where batch * kv <= 32768 tokens, v13's dimension-sliced "
                   "persistent kernel (each fp8 byte converted once for K and V) elsewhere",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
