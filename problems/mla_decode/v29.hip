// v29 (session 21): v26 with the 32-tile shapes' (bs 32 / kv 8192, bs 256 / kv 1024) Q K^T on wgmma
// (mla_dims3::kWQ, problems/common/mla_fp8_wgqk.h): the KV tiles by TMA tensor copies into 64-byte-swizzled boxes that
// wgmma reads as its A operand, Q as e4m3 hi / lo terms (B operand, N 32), the two warpgroups taking half the dims each;
// P V and the rest as v26. Hopper's mma.sync runs at half the wgmma rate, and Q K^T was 36 of the tile's 68
// m16n8k16 a warp (docs/perf.md, session 21).
#define MLA_V28_XOPT mla_dims5::kWQ
#define MLA_V28_XF mla_dims5::fLf
#define MLA_V28_NAME "v29"
#define MLA_V28_DESC "v26 with the 32-tile shapes' Q K^T on wgmma (TMA-swizzled KV tiles, e4m3 hi / lo Q)"
#include "problems/mla_decode/v28.hip"
