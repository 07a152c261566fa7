// v81e (session 20): v81b with 3 gate_up blocks an SM (launch bound: at most 85 registers).
#define MOE_FEW64 1
#define MOE_FEW64_MINB 3
#define V81_NAME "v81e"
#define V81_DESC "v81b with 3 gate_up blocks an SM"
#include "problems/moe_mxfp4/v81.hip"
