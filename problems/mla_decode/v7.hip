// v7 (experimental, not yet measured on a device): v5 with eight warps per block and 64-token
// tiles on NVIDIA (half the barriers and softmax passes per token, half the accumulator registers
// per thread). 32-token tiles on AMD (64 KB of LDS on CDNA3).
#include "problems/common/mla_mxfp4_split.h"

namespace {

using namespace mla_kernels;

#if defined(__HIP_PLATFORM_AMD__)
using KvMxfp4Wide = KvMxfp4SplitFormat<MmaGeo<8, 32>, 4, 1>;
#else
using KvMxfp4Wide = KvMxfp4SplitFormat<MmaGeo<8, 64>, 4, 2>;
#endif

size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<KvMxfp4Wide>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<KvMxfp4Wide>(a, "mla_mma_kernel<mxfp4 split scales, 8 warps>"); }

}  // namespace

MLA_DECODE_VARIANT("v7", gpu, "experimental: v5 with 8 warps per block and 64-token tiles",
                   "q,kv_mxfp4,kv_mxfp4_scale,kv_indptr", 0);
