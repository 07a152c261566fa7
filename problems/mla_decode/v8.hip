// v8: split-KV flash decoding on fp8 KV (problems/common/mla_fp8_pipe.h): one 8-warp block per SM,
// a 5-stage cp.async ring of 64-token tiles, two block barriers per tile, warps own tokens in
// Q K^T, hardware fp8 -> f16 conversion, f16 matrix instructions. Two launches at most: main +
// combine. AMD builds run v6's kernel: the pipeline assumes NVIDIA's mma.sync lane layout.
#include "problems/common/mla_fp8_pipe.h"
#include "problems/common/mla_fp8_tile.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
size_t workspace_bytes(const MlaDecodeConfig& c) { return mla_pipe::pipe_workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { mla_pipe::pipe_launch(a, "mla_fp8_pipe_kernel"); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v8", gpu,
                   "split-KV flash decoding on fp8 KV: one 8-warp block per SM, 5-stage 64-token cp.async ring, "
                   "2 barriers per tile, hardware fp8 conversion, combine kernel",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
