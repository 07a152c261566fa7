// v30 (session 21): v26 with the 32-tile shapes (bs 32 / kv 8192, bs 256 / kv 1024) on mla_tok::TokPath
// (problems/common/mla_fp8_tok.h): tokens as the wgmma M dimension, both products on wgmma (Q K^T from the
// TMA-swizzled KV tile against e4m3 hi / lo Q, P V with V^T from registers), the two warpgroups on alternate tiles with
// no block barrier inside an item; bs 32 / kv 8192's 4 splits merged by mla_dims' combine kernel. The other shapes as
// v26. Measurements: docs/perf.md, session 21.
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#define MLA_V24_XF mla_dims5::fLf
#define MLA_V24_DIRECT_PATH mla_tok::TokPath<MLA_V30_S>
#ifndef MLA_V30_S
#define MLA_V30_S 4
#define MLA_V30_NAME "v30"
#endif
#include "problems/common/mla_fp8_tok.h"
#include "problems/mla_decode/v24.hip"
MLA_DECODE_VARIANT(MLA_V30_NAME, gpu,
                   "v26 with the 32-tile shapes on tokens-as-M wgmma tiles (both products on wgmma, two warpgroups "
                   "ping-ponging tiles)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
