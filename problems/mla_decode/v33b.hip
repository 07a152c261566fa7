// v33b (session 24, measurement): v33 with a 3-stage KV ring on the small shapes.
#define MLA_V24_S_SMALL 3
#define V33_BASE_ONLY 1
#include "problems/mla_decode/v33.hip"
MLA_DECODE_VARIANT("v33b", gpu, "v33 with a 3-stage KV ring on the small shapes", "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
