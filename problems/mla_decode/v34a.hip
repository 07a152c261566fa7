// v34a (session 24, measurement): v33 (every small shape on the direct path) with v34's first copies from the spec's spans.
#define MLA_V24_DIR_XF mla_dims5::fSp
#define V33_BASE_ONLY 1
#include "problems/mla_decode/v33.hip"
MLA_DECODE_VARIANT("v34a", gpu, "v33 with the first copies from the spec's spans", "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
