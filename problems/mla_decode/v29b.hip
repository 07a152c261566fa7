// v29b (session 21, measurement): v29 with Q K^T in four N-16 accumulator chains (hi / lo x two) instead of two N-32.
#define MLA_V28_XOPT (mla_dims5::kWQ | mla_dims5::kWQ4)
#define MLA_V28_XF mla_dims5::fLf
#define MLA_V28_NAME "v29b"
#define MLA_V28_DESC "v29 with four N-16 wgmma chains for Q K^T"
#include "problems/mla_decode/v28.hip"
