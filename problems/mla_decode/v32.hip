// v32 (session 22): v26 with the small path's several-clusters-a-batch kernels (bs 4 / kv 8192, bs 32 / kv 1024 on
// the H200) counting into the cross-cluster merge with one thread's fences (mla_dcl2::kFence1 in the pull epilogue),
// measured as v22f (-0.09 / -0.41 us on those shapes: docs/perf.md, section "mla_decode v22") and never
// adopted by the composed variants. Every other shape runs v26's kernels.
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#define MLA_V24_XF mla_dims5::fLf
#define MLA_V24_OPTN_X mla_dcl2::kFence1
#include "problems/mla_decode/v24.hip"
MLA_DECODE_VARIANT("v32", gpu,
                   "v26 with the small path's cross-cluster merge counted in by one thread's fences (kFence1 in the "
                   "pull epilogue)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
