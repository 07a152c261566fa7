// v33 (session 24): v32 with the small shapes (batch * kv_len <= 65536) whose split plan fits one wave (H200: all four:
// bs 4 / kv 1024, bs 4 / kv 8192, bs 32 / kv 1024, bs 64 / kv 1024) on the large shapes' direct path
// (mla_dims5::DirPath: one item a block, f16 partials, cooperative launch) with the merge spread over every block of
// the batch (mla_dims5::fMw) instead of the cluster kernels' DSMEM and cross-cluster merge (~5 us of bs 32 / kv
// 1024's 14.4 us kernel: docs/perf.md, section "mla_decode v22"). Measurements: docs/perf.md, session 24.
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#define MLA_V24_XF mla_dims5::fLf
#define MLA_V24_OPTN_X mla_dcl2::kFence1
#ifndef MLA_V24_DIR_SMALL
#define MLA_V24_DIR_SMALL 1
#endif
#ifndef MLA_V24_S_SMALL
#define MLA_V24_S_SMALL 2
#endif
#include "problems/mla_decode/v24.hip"
#if !defined(V33_BASE_ONLY)
MLA_DECODE_VARIANT("v33", gpu,
                   "v32 with the small shapes on the direct path, merged in the kernel by every block of the batch",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
#endif
