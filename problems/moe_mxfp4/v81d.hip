// v81d (session 20): v81b with 8 down slices a block (half the down blocks).
#define MOE_FEW64 1
#define MOE_FEW64_NS 8
#define V81_NAME "v81d"
#define V81_DESC "v81b with 8 down slices a block"
#include "problems/moe_mxfp4/v81.hip"
