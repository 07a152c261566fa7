// The fp8 dispatch of v14 and v15 (and of v16 outside its own path): v12's one-launch cluster kernels
// where batch * kv_len <= 32768 tokens (problems/common/mla_fp8_cluster.h), v13's dimension-sliced
// persistent kernel elsewhere (problems/common/mla_fp8_dims.h). The threshold is where each measured
// faster on the benchmark shapes (docs/perf.md, session 3). DOPT / COPT: the kernels' kOpt* bits
// (mla_dims / mla_cluster; 0 = the kernels v14 runs).
#pragma once
#include "problems/common/mla_fp8_cluster.h"
#include "problems/common/mla_fp8_dims.h"

namespace mla_paths {
namespace {  // internal linkage: every variant file gets its own launch statics

#if defined(HARNESS_GPU) && !defined(__HIP_PLATFORM_AMD__)
template <int DOPT, int COPT>
struct ClusterOrDims {
  static constexpr int64_t kClusterTokens = 32768;
  using DimsK = mla_dims::Dims<5, true, DOPT>;
  using Small = mla_cluster::Small<COPT>;
  static mla_cluster::SmallChoice pick(const MlaDecodeConfig& c) {
    if (int64_t(c.batch_size) * c.kv_seq_len > kClusterTokens) return {};
    return Small::choose(c);
  }
  static size_t workspace_bytes(const MlaDecodeConfig& c) {
    const mla_cluster::SmallChoice ch = pick(c);
    return ch.kind == mla_cluster::SmallChoice::none ? DimsK::workspace_bytes(c) : Small::workspace_bytes(ch, c);
  }
  static void launch(const MlaDecodeArgs& a) {
    const mla_cluster::SmallChoice ch = pick(a.cfg);
    if (ch.kind == mla_cluster::SmallChoice::none)
      DimsK::launch(a, DOPT ? "mla_fp8_dims_kernel<5, persistent, opt>" : "mla_fp8_dims_kernel<5, persistent>");
    else
      Small::launch(ch, a);
  }
};
#endif

}  // namespace
}  // namespace mla_paths
