// v81c (session 20): v81b with 2 down slices a block (twice the down blocks).
#define MOE_FEW64 1
#define MOE_FEW64_NS 2
#define V81_NAME "v81c"
#define V81_DESC "v81b with 2 down slices a block"
#include "problems/moe_mxfp4/v81.hip"
