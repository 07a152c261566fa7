// v82c (measurement): v82 with 1 column block a down block (v81's grid; only the activations' one burst and the
// weight-only mainloop differ from v81's down).
#define MOE_XR_NS 1
#define V82_NAME "v82c"
#include "problems/moe_mxfp4/v82.hip"
