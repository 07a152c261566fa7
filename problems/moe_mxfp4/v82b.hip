// v82b (measurement): v82 with 2 column blocks a down block (v82: 4; the late tiles 1 in both).
#define MOE_XR_NS 2
#define V82_NAME "v82b"
#define V82_DESC "v82 with 2 column blocks a down block"
#include "problems/moe_mxfp4/v82.hip"
