// v76p (session 20): v76 with a fence.proxy.async after each wait for a stage's copies.
#define V76_MBAR 2
#define V76_NAME "v76p"
#define V76_DESC "v76 with a fence.proxy.async after each wait for a stage's copies"
#include "problems/moe_mxfp4/v76.hip"
