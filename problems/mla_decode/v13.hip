// v13: split-KV flash decoding on fp8 KV with the warps sliced by dimension
// (problems/common/mla_fp8_dims.h): each fp8 byte is read from shared memory and converted to f16 once
// and serves as K (Q K^T) and, transposed in registers by movmatrix, as V (P V); partial logits are
// summed through shared memory; one bulk copy (cp.async.bulk + mbarrier) fills a 64-token stage.
// One persistent block per SM walks the (batch, split) items of v8's split plan with the copy ring
// running across items; splits are merged by a one-pass combine kernel. Every shape takes this path.
// AMD builds run v6's kernel, as v8 and v11 do (the kernel needs sm_90: bulk copies, movmatrix).
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dims.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
using DimsK = mla_dims::Dims<5, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return DimsK::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { DimsK::launch(a, "mla_fp8_dims_kernel<5, persistent>"); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v13", gpu,
                   "split-KV flash decoding on fp8 KV, warps sliced by dimension: each fp8 byte converted once "
                   "for K and V (movmatrix transpose), one bulk copy per tile, persistent blocks, one-pass combine",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
