// v22 (mla-small2): v21 with a leaner small-shape path; large shapes exactly as v21 (v20's dims3 path).
//   - batch * kv_len <= 65536 (bs 4 / kv 1024 and 8192, bs 32 / kv 1024, bs 64 / kv 1024): v19's dims-cluster
//     kernel (problems/common/mla_fp8_dcl2.h) with the large path's measured gains ported and the push
//     epilogue's fixed costs cut: kEF (evict_first KV copies), kF16P (f16 partial logits, Q pre-scaled by
//     2^-3); one cluster a batch (bs 4 / kv 1024: C 16, bs 64 / kv 1024: C 2): v19's push epilogue with
//     kPush16 (16-byte remote stores of the partial O) and kWPar (weight table by 16 C threads); several
//     clusters a batch (bs 4 / kv 8192: C 4 x 7, bs 32 / kv 1024: C 2 x 2): v16's pull epilogue, as v19
//     (call 1: the push epilogue with coalesced slices, kCoal, was still 0.2-1.0 us slower there);
//   - above: v20's dims3 kernel (mla_dims3::Dims3<3, F16P | QP | EF, 2>), as v21.
// Measurements: docs/perf.md, section "mla_decode v22". AMD builds run v6's kernel, as v8, v11-v21 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dcl2.h"
#include "problems/common/mla_fp8_dims3.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
namespace d = mla_dcl2;
constexpr int kOpt1 = d::kPush | d::kFence1 | d::kEF | d::kF16P | d::kPush16 | d::kWPar;  // one cluster a batch
constexpr int kOptN = d::kEF | d::kF16P;  // several: v16's pull epilogue (call 1's v22a)
using Small = d::SmallPath<2, 3, kOpt1, kOptN>;
using Large = mla_dims3::Dims3<3, mla_dims3::kF16P | mla_dims3::kQP | mla_dims3::kEF, 2>;  // v20's Final (as v21)
size_t workspace_bytes(const MlaDecodeConfig& c) {
  return Small::applies(c) ? Small::workspace_bytes(c) : Large::workspace_bytes(c);
}
void launch(const MlaDecodeArgs& a) {
  if (Small::applies(a.cfg))
    Small::launch(a);
  else
    Large::launch(a);
}
#endif

}  // namespace

MLA_DECODE_VARIANT("v22", gpu,
                   "v21 + small path: evict_first KV copies, f16 partial logits; push epilogue with 16-byte pushes "
                   "and a parallel weight table (one cluster a batch)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
