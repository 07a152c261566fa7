// v10t: split-KV flash decoding on fp8 KV with Hopper warpgroup MMA (wgmma, e4m3) for Q K^T
// (problems/common/mla_fp8_wgmma.h; A = Q in registers; check only: forced 208-token splits, short tiles): v8's pipeline otherwise (8-warp blocks,
// 64-token cp.async ring, two barriers per tile, P V on f16 mma.sync). Q as two e4m3 terms (hi + lo).
// Needs sm_90a; AMD builds run v6's kernel (the pipeline assumes NVIDIA's lane layouts).
#include "problems/common/mla_fp8_tile.h"
#if !defined(__HIP_PLATFORM_AMD__)
#include "problems/common/mla_fp8_wgmma.h"
#endif

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
size_t workspace_bytes(const MlaDecodeConfig& c) { return mla_wg::wg_workspace_bytes< 1, 208>(c); }
void launch(const MlaDecodeArgs& a) { mla_wg::wg_launch<true, 5, 1, 208>(a, "mla_fp8_wgmma_kernel"); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v10t", gpu,
                   "split-KV flash decoding on fp8 KV: wgmma e4m3 Q K^T (A = Q in registers; check only: forced 208-token splits, short tiles), Q as hi+lo e4m3, "
                   "f16 mma.sync P V, combine kernel",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
