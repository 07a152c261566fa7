// v78 (session 20): v77 with the 64-row path at 5 stages of 4 k-blocks (185 KB; copies 3 stages ahead) instead of 4:
// without a block barrier a stage the deeper ring may keep more of the weights in flight (5 stages measured the same
// or 1% slower with v30's barrier protocol).
#define MOE_WS30_STAGES 5
#define V77_NAME "v78"
#define V77_DESC "v77 with the 64-row path at 5 stages"
#include "problems/moe_mxfp4/v77.hip"
