// v28a (session 21, measurement): v28 with every warp's K conversions by bit moves (mla_dims3::kICA).
#define MLA_V28_XOPT mla_dims5::kICA
#define MLA_V28_XF mla_dims5::fLf
#define MLA_V28_NAME "v28a"
#define MLA_V28_DESC "v26 with all of the tile's K conversions by bit moves instead of F2FP"
#include "problems/mla_decode/v28.hip"
