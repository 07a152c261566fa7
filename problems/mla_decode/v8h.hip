// v8h: v8 with half of the fp8 pairs converted by hardware (times 2^-8), half by sign-filling permutes
// (problems/common/mla_fp8_pipe.h). AMD builds run v6's kernel: the pipeline assumes NVIDIA's mma.sync lanes.
#include "problems/common/mla_fp8_pipe.h"
#include "problems/common/mla_fp8_tile.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
using namespace mla_pipe;
size_t workspace_bytes(const MlaDecodeConfig& c) { return pipe_workspace_bytes(c); }
void launch(const MlaDecodeArgs& a) { pipe_launch<QkF16<Cvt::mix>, Cvt::mix>(a, "mla_fp8_pipe_kernel (v8h)"); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v8h", gpu, "v8 with half of the fp8 pairs converted by hardware, half by sign-filling permutes", "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
