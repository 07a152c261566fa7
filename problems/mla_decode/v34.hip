// v34 (session 24): v32 with the small shapes that the cluster plan gives several clusters a batch (H200: bs 4 / kv 8192,
// bs 32 / kv 1024) on v33's direct path (mla_dims5::DirPath, the merge spread over the batch's blocks: fMw), its first
// copies issued from the spec's spans before kv_indptr arrives (fSp). v33 measured the direct path on every small
// shape: slower on all four (+1.3% on bs 32 / kv 1024, +34% on bs 4 / kv 1024). docs/perf.md, session 24.
#define MLA_V24_DIR_SMALL 2
#define MLA_V24_DIR_XF mla_dims5::fSp
#define V33_BASE_ONLY 1
#include "problems/mla_decode/v33.hip"
#if !defined(V34_BASE_ONLY)
MLA_DECODE_VARIANT("v34", gpu,
                   "v32 with bs 4 / kv 8192 and bs 32 / kv 1024 on the direct path merged by the batch's blocks, first "
                   "copies from the spec's spans",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
#endif
