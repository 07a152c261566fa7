// v28n (session 21, measurement): v26 with bs 32 / kv 8192's merging launch not cooperative (mla_dims5::fNc).
#define MLA_V28_XOPT 0
#define MLA_V28_XF (mla_dims5::fLf | mla_dims5::fNc)
#define MLA_V28_NAME "v28n"
#define MLA_V28_DESC "v26 with the merging launch of bs 32 / kv 8192 not cooperative"
#include "problems/mla_decode/v28.hip"
