// v25t (mla-large4, measurement only): v25 with the phase timeline on its 32-tile path:
// `MLA_D6_TS=30 harness run mla_decode --variant v25t --mode benchmark --shapes 3,6` prints the 30th launch's phases.
#define MLA_V25_F (mla_dims6::fMg | mla_dims6::fHp | mla_dims6::fQn | mla_dims6::fTs)
#include "problems/mla_decode/v25.hip"
MLA_DECODE_VARIANT("v25t", gpu, "measurement: v25 with the phase timeline (env MLA_D6_TS=N) on its 32-tile path",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
