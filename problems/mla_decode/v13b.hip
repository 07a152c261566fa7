// v13b: v13 with 16 warps (two token groups of 8 dim warps); v11 with a new kernel for the long blocks (problems/common/mla_fp8_dims.h): warps sliced by
// dimension, so each fp8 byte is read from shared memory and converted to f16 once and serves as K
// (Q K^T) and, transposed in registers by movmatrix, as V (P V); partial logits summed through shared
// memory; one bulk copy (cp.async.bulk + mbarrier) per 64-token tile instead of per-thread cp.async.
// Paths (v11's rule on v8's split plan): short blocks (<= 256 tokens) -> v11's 16-warp kernel;
// otherwise -> the dims kernel (16 warps, 5-stage ring, one block per SM).
// AMD builds run v6's kernel, as v8 and v11 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_wide.h"
#include "problems/common/mla_fp8_dims.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
using Wide16 = mla_wide::Wide<16, 128, 2, 1, false, 1>;  // v11's short-block kernel
using Regs8 = mla_wide::Wide<8, 64, 5, 1, true, 1>;      // v8's plan (for the rule)
using DimsK = mla_dims::Dims<2, 5>;

bool short_blocks(const MlaDecodeConfig& c) { return Regs8::plan(c).tokens_per_split <= 4 * 64; }

size_t workspace_bytes(const MlaDecodeConfig& c) {
  return short_blocks(c) ? Wide16::workspace_bytes(c) : DimsK::workspace_bytes(c);
}
void launch(const MlaDecodeArgs& a) {
  if (short_blocks(a.cfg))
    Wide16::launch(a, "mla_fp8_wide_kernel<16, 128, 2, 1, false, 1>");
  else
    DimsK::launch(a, "mla_fp8_dims_kernel<2, 5>");
}
#endif

}  // namespace

MLA_DECODE_VARIANT("v13b", gpu,
                   "v13 with 16 warps (two token groups of 8 dim warps); long blocks: warps sliced by dimension, each fp8 byte "
                   "converted once for K and V (movmatrix transpose), one bulk copy per tile; short blocks: v11's "
                   "16-warp kernel",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
