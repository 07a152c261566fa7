// v11f: v8's fp8 pipeline with Q converted bf16 -> f16 once per block into shared memory
// (problems/common/mla_fp8_wide.h): 16 warps, 64-token tiles, 5-stage ring, QK dims split over warp pairs, half of Q in registers. AMD builds run v6's kernel, as v8 does.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_wide.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
using Cfg = mla_wide::Wide<16, 64, 5, 1, true, 2>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Cfg::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Cfg::launch(a, "mla_fp8_wide_kernel<16, 64, 5, 1, true, 2>"); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v11f", gpu, "split-KV flash decoding on fp8 KV, Q f16 once per block in shared memory: 16 warps, 64-token tiles, 5-stage ring, QK dims split over warp pairs, half of Q in registers",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
