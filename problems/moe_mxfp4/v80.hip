// v80 (session 20): v79 on the 64-row path only (the 32-row gate_up as v72's).
#define V79_GATE_UP_MBAR 0
#define V79_NAME "v80"
#define V79_DESC "v79 on the 64-row path only"
#include "problems/moe_mxfp4/v79.hip"
