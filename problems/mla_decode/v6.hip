// v6 (experimental, not yet measured on a device): v3 with eight warps per block and 64-token
// tiles on NVIDIA (half the barriers and softmax passes per token, half the accumulator registers
// per thread) and the hardware fp8 -> f16 conversion. 32-token tiles on AMD (64 KB of LDS on CDNA3).
#include "problems/common/mla_fp8_tile.h"

namespace {

using namespace mla_kernels;

#if defined(__HIP_PLATFORM_AMD__)
using KvFp8Wide = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
#else
using KvFp8Wide = KvFp8Format<MmaGeo<8, 64>, 2, 2, true>;
#endif

size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<KvFp8Wide>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<KvFp8Wide>(a, "mla_mma_kernel<fp8, 8 warps>"); }

}  // namespace

MLA_DECODE_VARIANT("v6", gpu,
                   "experimental: v3 with 8 warps per block, 64-token tiles and hardware fp8 conversion",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
