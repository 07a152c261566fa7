// v27 (mla-large6, session 10): v26 with the 32-tile shapes' KV tile copies in two parts (mla_dims5's fH: rows
// [0, H) after barrier A of the tile two before, as v26 copies the whole tile, rows [H, 64) at the end of that
// tile), so that fewer KV bytes are pending at once: the cache flush leaves L2 full of dirty lines, and the KV
// copies (evict_first) displace fewer of them when fewer KV lines are in flight (docs/perf.md, "mla_decode v26").
// The other shapes on v26's paths exactly. Measurements: docs/perf-mla-large6.md. AMD builds run v6's kernel.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dcl2.h"
#include "problems/common/mla_fp8_dims3.h"
#include "problems/common/mla_fp8_dims4.h"
#include "problems/common/mla_fp8_dims5.h"

#ifndef V27_YF  // a measurement file may include this one with other options (and registers itself)
#define V27_YF (mla_dims5::fH(32) | mla_dims5::fP1)  // the 32-tile shapes' copy split (v26: 0, one copy a tile)
#define V27_SELF 1
#endif

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
namespace d = mla_dcl2;
constexpr int kOpt1 = d::kPush | d::kFence1 | d::kEF | d::kF16P | d::kPush16 | d::kWPar;  // as v24
constexpr int kOptN = d::kEF | d::kF16P;
using Small = d::SmallPath<2, 3, kOpt1, kOptN>;
using Clustered = mla_dims4::ClusterPath<2, mla_dims4::kF16P | mla_dims4::kQP | mla_dims4::kEF, 2>;  // v26's
using Direct = mla_dims5::DirPath<2, mla_dims5::kF16P | mla_dims5::kQP | mla_dims5::kEF, 2, true, true, mla_dims5::fLf,
                                  V27_YF>;
using Large = mla_dims3::Dims3<3, mla_dims3::kF16P | mla_dims3::kQP | mla_dims3::kEF, 2>;  // v22's
int pick(const MlaDecodeConfig& c) {
  if (Small::applies(c)) return 0;
  if (Clustered::applies(c)) return 1;
  if (Direct::applies(c)) return 2;
  return 3;
}
size_t workspace_bytes(const MlaDecodeConfig& c) {
  switch (pick(c)) {
    case 0: return Small::workspace_bytes(c);
    case 1: return Clustered::workspace_bytes(c);
    case 2: return Direct::workspace_bytes(c);
    default: return Large::workspace_bytes(c);
  }
}
void launch(const MlaDecodeArgs& a) {
  switch (pick(a.cfg)) {
    case 0: Small::launch(a); break;
    case 1: Clustered::launch(a); break;
    case 2: Direct::launch(a); break;
    default: Large::launch(a); break;
  }
}
#endif

}  // namespace

#if defined(V27_SELF)
MLA_DECODE_VARIANT("v27", gpu,
                   "v26 with the 32-tile shapes' KV tile copies in two parts issued at different points of the tile "
                   "before (fewer KV bytes pending: fewer of the flush's dirty L2 lines written back)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
#endif
