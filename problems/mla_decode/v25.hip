// v25: v24 with bs 32 / kv 8192's split partials stored as f16 before the in-kernel merge (half the bytes written
// and merged; mla_dims5's fHp, found by helper mla-large4 in session 9: docs/perf.md, section "mla_decode v25").
// Every other shape runs v24's kernels (bs 256 / kv 1024 has one split: no partials).
#define MLA_F16_PARTIALS true
#include "problems/mla_decode/v24.hip"
MLA_DECODE_VARIANT("v25", gpu,
                   "v24 + bs 32 / kv 8192's split partials stored as f16 (half the bytes written and merged in the kernel)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
