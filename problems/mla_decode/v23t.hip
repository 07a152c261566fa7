// v23t (mla-large2, measurement only): v23's large path (mla_dims4::Dims4, fCl) on every shape with the
// timeline (kTs): `MLA_D4_TS=1 harness run mla_decode --variant v23t --mode test --shape-set benchmark
// --shapes 3,5,6,7` prints the phases of each shape's first launch.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dims4.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
using Large = mla_dims4::Dims4<3, mla_dims4::kF16P | mla_dims4::kQP | mla_dims4::kEF | mla_dims4::kTs, 2, mla_dims4::fCl>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Large::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Large::launch(a); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v23t", gpu, "measurement: v23's large path (dims4, fCl) on every shape with the kTs timeline",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
