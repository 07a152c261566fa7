// v36 (session 25): v35 with the small path's push epilogue (one cluster a batch: bs 4 / kv 1024, bs 64 / kv 1024 on
// the H200) on st.async stores counted on each receiving block's mbarrier (mla_dcl2::kAsync) instead of plain remote
// stores, a release fence and a cluster barrier. Same values, same merge order: outputs bit for bit v35's.
// Measurements: docs/perf.md, session 25.
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#define MLA_V24_XF mla_dims5::fLf
#define MLA_V24_OPT1_X (mla_dcl2::kLean | mla_dcl2::kAsync)
#define MLA_V24_OPTN_X (mla_dcl2::kFence1 | mla_dcl2::kLean)
#define MLA_V24_LARGE_X mla_dims3::kLean
#include "problems/mla_decode/v24.hip"
MLA_DECODE_VARIANT("v36", gpu,
                   "v35 with the one-cluster-a-batch push epilogue on st.async stores counted on the receiver's "
                   "mbarrier (no release fence, no cluster barrier after the pushes)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
