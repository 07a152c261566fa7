// v5: MXFP4 KV like v4, with the block scales kept out of the per-element decode (format policy in
// mla_mxfp4_split.h): four warps, 32-token tiles.
#include "problems/common/mla_mxfp4_split.h"

namespace {

using namespace mla_kernels;

#if defined(__HIP_PLATFORM_AMD__)
using KvMxfp4Split = KvMxfp4SplitFormat<MmaGeo<4, 32>, 4, 2>;
#else
using KvMxfp4Split = KvMxfp4SplitFormat<MmaGeo<4, 32>, 6, 2>;
#endif

size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<KvMxfp4Split>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<KvMxfp4Split>(a, "mla_mma_kernel<mxfp4 split scales>"); }

}  // namespace

MLA_DECODE_VARIANT("v5", gpu,
                   "v4 with scales kept out of the per-element decode: f16 codes by bit moves, K scales on each "
                   "k-step's product, V scales as exact f16 powers of two on token pairs",
                   "q,kv_mxfp4,kv_mxfp4_scale,kv_indptr", 0);
