// v37 (session 25): v35 with the small path's Q brought into shared memory by bulk copies issued ahead of the first
// KV tile's (mla_dcl2::kQT) instead of every thread's global loads, whose first use held 13-16% of v35's small-shape
// stall samples. Same values and order: outputs bit for bit v35's. Measurements: docs/perf.md, session 25.
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#define MLA_V24_XF mla_dims5::fLf
#define MLA_V24_OPT1_X (mla_dcl2::kLean | mla_dcl2::kQT)
#define MLA_V24_OPTN_X (mla_dcl2::kFence1 | mla_dcl2::kLean | mla_dcl2::kQT)
#define MLA_V24_LARGE_X mla_dims3::kLean
#include "problems/mla_decode/v24.hip"
MLA_DECODE_VARIANT("v37", gpu,
                   "v35 with the small path's Q copied into shared memory ahead of the first KV tile (bulk copies) "
                   "instead of every thread's global loads",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
