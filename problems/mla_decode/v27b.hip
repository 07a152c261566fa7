// v27b (session 16, measurement): v27 prefetching four KV tiles at the start (mla_dims5::fPf4).
#define MLA_V27_PF mla_dims5::fPf4
#define MLA_V27_BASE_ONLY 1
#include "problems/mla_decode/v27.hip"
MLA_DECODE_VARIANT("v27b", gpu, "measurement: v27 prefetching four KV tiles into L2 at the start",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
