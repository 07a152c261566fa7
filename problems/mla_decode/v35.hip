// v35 (session 25): v32 with the small path's kernels leaner where a block's first pass meets cold code
// (mla_dcl2::kLean): the harness's L2 flush evicts the kernels' code, and ncu put 15-20% of v32's small-shape stall
// samples on instruction fetch, most at the first instruction after a jump over never-run code (a short tile's
// unrolled row-fill copies, 4-12 KB each; the push kernels' several-clusters merge, 21 KB). The large shapes' three
// paths get the same rolled row fill (mla_dims3::kLean). Same arithmetic and order as v32: outputs bit for bit.
// Measurements: docs/perf.md, session 25.
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#define MLA_V24_XF mla_dims5::fLf
#define MLA_V24_OPT1_X mla_dcl2::kLean
#define MLA_V24_OPTN_X (mla_dcl2::kFence1 | mla_dcl2::kLean)
#define MLA_V24_LARGE_X mla_dims3::kLean
#include "problems/mla_decode/v24.hip"
MLA_DECODE_VARIANT("v35", gpu,
                   "v32 with the small path's kernels leaner on their first pass over cold code (short-tile fills "
                   "not unrolled, the push kernels without the several-clusters merge; the large paths' fills alike)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
