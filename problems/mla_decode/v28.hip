// v28 (session 21, measurement): v26 with the K conversions of the 32-tile shapes' tile (bs 32 / kv 8192, bs 256 /
// kv 1024) made by bit moves instead of F2FP (cvt.rn.f16x2.e4m3x2) in warps dw >= 4, one warp of each scheduler
// (mla_dims3::kIC): is the conversion pipe what bounds the tile? MLA_V28_XOPT / MLA_V28_XF pick other forms (v28a:
// every warp, kICA; v28n: v26 with the merging launch not cooperative, fNc).
#define MLA_F16_PARTIALS true
#define MLA_V24_S 2
#define MLA_V24_S_CL 2
#ifndef MLA_V28_XOPT
#define MLA_V28_XOPT mla_dims5::kIC
#define MLA_V28_XF mla_dims5::fLf
#define MLA_V28_NAME "v28"
#define MLA_V28_DESC "v26 with half the tile's K conversions (warps 4-7) by bit moves instead of F2FP"
#endif
#define MLA_V24_XF MLA_V28_XF
#define MLA_V24_XOPT MLA_V28_XOPT
#include "problems/mla_decode/v24.hip"
MLA_DECODE_VARIANT(MLA_V28_NAME, gpu, MLA_V28_DESC, "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
