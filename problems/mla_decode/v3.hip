// v3: split-KV flash decoding reading fp8 KV on matrix instructions (mla_mma_decode.h with the fp8
// format of mla_fp8_tile.h): four warps, 32-token tiles, fp8 -> f16 by moving bits. Tiles arrive
// through a 16-byte cp.async pipeline on NVIDIA, plain copies elsewhere. Two launches at most:
// main + combine.
#include "problems/common/mla_fp8_tile.h"

namespace {

using namespace mla_kernels;

using KvFp8 = KvFp8Format<MmaGeo<4, 32>,
#if defined(__HIP_PLATFORM_AMD__)
                          2,
#else
                          3,  // three blocks per SM: 12 warps to hide latency
#endif
                          3, false>;

size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<KvFp8>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<KvFp8>(a, "mla_mma_kernel<fp8>"); }

}  // namespace

MLA_DECODE_VARIANT("v3", gpu,
                   "split-KV flash decoding on fp8 KV: f16 matrix instructions, cp.async pipeline, K and V from one "
                   "on-chip copy, combine kernel",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
