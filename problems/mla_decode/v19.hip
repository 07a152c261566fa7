// v19 (mla-small): v18 with, for batch * kv_len <= 65536 (bs 4 / kv 1024 and 8192, bs 32 / kv 1024, bs 64 /
// kv 1024), v16's dims-cluster kernel on v18's leaner tile (problems/common/mla_fp8_dcl2.h):
//   - one cluster a batch (bs 4 / kv 1024: clusters of 16; bs 64 / kv 1024: clusters of 2): the push
//     epilogue (each block stores its bf16 partial O straight into the merging rank's shared memory, one
//     cluster barrier, a local merge);
//   - several clusters a batch (bs 4 / kv 8192, bs 32 / kv 1024): v16's pull epilogue and counter merge.
// Larger shapes: v18's dims2 path (mla_dims2::Dims2<3, 3>, exactly as v18.hip runs it).
// Measurements: docs/perf.md, section "mla_decode v19" (calls 1 and 2). AMD builds run v6's kernel, as v8, v11-v18 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_dcl2.h"
#include "problems/common/mla_fp8_dims2.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
// Small: the small-shape path (mla_dcl2::SmallPath); above it v18's dims2 path.
template <class Small>
struct V19 {
  using D = mla_dims2::Dims2<3, 3>;  // v18's large-shape path
  static size_t workspace_bytes(const MlaDecodeConfig& c) {
    return Small::applies(c) ? Small::workspace_bytes(c) : D::workspace_bytes(c);
  }
  static void launch(const MlaDecodeArgs& a) {
    if (Small::applies(a.cfg))
      Small::launch(a);
    else
      D::launch(a, "mla_fp8_dims2_kernel");
  }
};
// S 2, MV 3; one cluster a batch: kPush (| kFence1, as measured: it only changes the several-cluster branch,
// which these plans never take); several: the pull epilogue (OPT 0).
constexpr int kOptPush = mla_dcl2::kPush | mla_dcl2::kFence1;
using Final = V19<mla_dcl2::SmallPath<2, 3, kOptPush, 0>>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return Final::workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { Final::launch(a); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v19", gpu,
                   "v18 + v18's leaner dims tile in v16's cluster kernel for batch * kv <= 65536; one cluster a batch: "
                   "partials pushed into the merging rank's shared memory (bf16), one cluster barrier",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);

#if !defined(__HIP_PLATFORM_AMD__)
#define MLA_V19_VARIANT(NS, NAME, C_, DESC)                                                     \
  namespace NS {                                                                                 \
  using C = C_;                                                                                  \
  size_t workspace_bytes(const MlaDecodeConfig& c) { return C::workspace_bytes(c); }            \
  void launch(const MlaDecodeArgs& a) { C::launch(a); }                                          \
  MLA_DECODE_VARIANT(NAME, gpu, DESC, "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);                     \
  }
// Measurement variants (docs/perf.md, section "mla_decode v19"): call 2's "v19" (push epilogue on every plan) and "v19nf"
// (pull epilogue on every plan), and the timeline tool (run it in test mode: see the notes).
using V19Push = V19<mla_dcl2::SmallPath<2, 3, kOptPush, kOptPush>>;
using V19Pull = V19<mla_dcl2::SmallPath<2, 3, 0, 0>>;
using V19Ts = V19<mla_dcl2::SmallPath<2, 3, kOptPush | mla_dcl2::kTs, mla_dcl2::kTs>>;
MLA_V19_VARIANT(v19_push, "v19push", V19Push, "measurement: v19 with the push epilogue on every plan (call 2's v19)")
MLA_V19_VARIANT(v19_pull, "v19pull", V19Pull, "measurement: v19 with the pull epilogue on every plan (call 2's v19nf)")
MLA_V19_VARIANT(v19_ts, "v19ts", V19Ts, "measurement: v19 with a per-block timeline (env MLA_V19_TS=N prints call N's)")
#endif
