// v27 (session 16): v26 with the two 32-tile shapes' blocks (bs 32 / kv 8192, bs 256 / kv 1024) asking L2 for the two
// KV tiles after their 2-stage ring's first ones at the start (mla_dims5::fPf2): with two stages the DRAM idles from
// when the first two tiles have landed until the first refill is issued (after tile 0's compute). Measurements:
// docs/perf.md, section "Session 16". AMD builds run v6's kernel, as v8, v11-v26 do.
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#ifndef MLA_V27_PF
#define MLA_V27_PF mla_dims5::fPf2
#endif
#define MLA_V24_XF (mla_dims5::fLf | MLA_V27_PF)
#define MLA_V24_XD MLA_V27_PF
#include "problems/mla_decode/v24.hip"
#if !defined(MLA_V27_BASE_ONLY)
MLA_DECODE_VARIANT("v27", gpu,
                   "v26 with the 32-tile shapes' blocks prefetching their next two KV tiles into L2 at the start",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
#endif
