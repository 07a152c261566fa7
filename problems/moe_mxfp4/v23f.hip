// v23f (test only): v23 with the exact fix-up of moe_fp8_rows.h forced on some weight rows, tokens and
// SwiGLU rows (FORCE = 1), to check that path on the 64-row shapes. Not for timing.
#define FP8_FORCE 1
#include "problems/moe_mxfp4/v23.hip"
