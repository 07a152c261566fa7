// v75p (session 20): v75 with a fence.proxy.async after each "full" wait (the copies made visible to wgmma's
// shared-memory reads by the consumer, as the memory model spells it).
#define V75_MBAR 2
#define V75_NAME "v75p"
#define V75_DESC "v75 with a fence.proxy.async after each wait for a stage's copies"
#include "problems/moe_mxfp4/v75.hip"
