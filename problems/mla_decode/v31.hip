// v31 (session 21): v26 with the 32-tile shapes' (bs 32 / kv 8192, bs 256 / kv 1024) P V accumulated in f16 over each
// tile and added to the f32 O (mla_dims3::kPV16): mma.sync with f16 accumulators issues ~20% faster than with f32 on
// the H200 (scripts/microbench/conv_rate.cu), and P V is 32 of the tile's 68 m16n8k16 a warp.
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#define MLA_V24_XF mla_dims5::fLf
#define MLA_V24_XOPT mla_dims5::kPV16
#include "problems/mla_decode/v24.hip"
MLA_DECODE_VARIANT("v31", gpu, "v26 with the 32-tile shapes' P V accumulated in f16 a tile (added to the f32 O)",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
