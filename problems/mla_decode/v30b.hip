// v30b (session 21, measurement): v30 with a 2-stage KV ring (one stage a warpgroup).
#define MLA_V30_S 2
#define MLA_V30_NAME "v30b"
#include "problems/mla_decode/v30.hip"
