// v81b (session 20): v81 with its gate_up in one K-part.
#define MOE_FEW64 1
#define V81_NAME "v81b"
#define V81_DESC "v81 with the 64-row tiles' gate_up in one K-part"
#include "problems/moe_mxfp4/v81.hip"
