// v12: one launch per call on the latency-bound shapes (batch * kv_len <= 65536 tokens), v11 elsewhere.
// Kernel: problems/common/mla_fp8_cluster.h (v11's fp8 tile pipeline; blocks of a batch in thread-block
// clusters that merge their partial outputs through distributed shared memory; several clusters of a
// batch merged by the last one to finish, through self-resetting counters in a __device__ array; the
// first KV copies issued before kv_indptr arrives). Configurations (chosen from measurements on the
// H200, docs/perf.md, section "mla_decode v12"):
//   one cluster of 16 blocks a batch, 64 tokens a block, fits one wave (bs 4 / kv 1024):
//     8 warps, 64-token tiles, clusters of 16 (non-portable size), 2 blocks per SM;
//   otherwise (bs 4 / kv 8192, bs 32 / kv 1024, bs 64 / kv 1024):
//     4 warps, 32-token tiles, 2-stage ring, clusters of 8, 3 blocks per SM, splits from the cost model.
// (v12q, measured beside it in e104a31: v11's regs8 block merged by clusters of 2-4 on larger shapes;
// superseded by v13 there.)
// AMD builds run v6's kernel, as v8 and v11 do.
#include "problems/common/mla_fp8_tile.h"
#include "problems/common/mla_fp8_wide.h"
#include "problems/common/mla_fp8_cluster.h"

namespace {

#if defined(__HIP_PLATFORM_AMD__)
using namespace mla_kernels;
using Fallback = KvFp8Format<MmaGeo<8, 32>, 2, 1, true>;
size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<Fallback>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<Fallback>(a, "mla_mma_kernel<fp8, 8 warps>"); }
#else
// v11, unchanged.
using Wide16 = mla_wide::Wide<16, 128, 2, 1, false, 1>;
using Two8 = mla_wide::Wide<8, 64, 2, 2, false, 1>;
using Regs8 = mla_wide::Wide<8, 64, 5, 1, true, 1>;
enum class Path { wide16, two8, regs8 };
Path pick11(const MlaDecodeConfig& c) {
  const mla_kernels::SplitPlan one = Regs8::plan(c);
  if (one.tokens_per_split <= 4 * 64) return Path::wide16;
  const int64_t cu = current_device_shape().compute_units;
  const mla_kernels::SplitPlan two = Two8::plan(c);
  const int64_t waves1 = (int64_t(c.batch_size) * one.splits + cu - 1) / cu;
  const int64_t waves2 = (int64_t(c.batch_size) * two.splits + 2 * cu - 1) / (2 * cu);
  if (one.tokens_per_split <= 1024 && waves2 < waves1) return Path::two8;
  return Path::regs8;
}
size_t ws11(const MlaDecodeConfig& c) {
  switch (pick11(c)) {
    case Path::wide16: return Wide16::workspace_bytes(c);
    case Path::two8: return Two8::workspace_bytes(c);
    default: return Regs8::workspace_bytes(c);
  }
}
void launch11(const MlaDecodeArgs& a) {
  switch (pick11(a.cfg)) {
    case Path::wide16: Wide16::launch(a, "mla_fp8_wide_kernel<16, 128, 2, 1, false, 1>"); break;
    case Path::two8: Two8::launch(a, "mla_fp8_wide_kernel<8, 64, 2, 2, false, 1>"); break;
    default: Regs8::launch(a, "mla_fp8_wide_kernel<8, 64, 5, 1, true, 1>"); break;
  }
}

constexpr int64_t kFusedTokens = 65536;  // batch * kv_len up to which the cluster path runs

mla_cluster::SmallChoice pick12(const MlaDecodeConfig& c) {
  if (int64_t(c.batch_size) * c.kv_seq_len > kFusedTokens) return {};
  return mla_cluster::choose_small(c);
}
size_t workspace_bytes(const MlaDecodeConfig& c) {
  const mla_cluster::SmallChoice ch = pick12(c);
  return ch.kind == mla_cluster::SmallChoice::none ? ws11(c) : mla_cluster::small_workspace_bytes(ch, c);
}
void launch(const MlaDecodeArgs& a) {
  const mla_cluster::SmallChoice ch = pick12(a.cfg);
  if (ch.kind == mla_cluster::SmallChoice::none)
    launch11(a);
  else
    mla_cluster::launch_small(ch, a);
}
#endif

}  // namespace

MLA_DECODE_VARIANT("v12", gpu,
                   "v11 on the large shapes; batch * kv <= 65536 tokens: one launch, blocks of 32-64 tokens in "
                   "thread-block clusters merging partials through distributed shared memory (16 a batch: 64-token "
                   "blocks; else 8 a cluster, 4 warps, clusters of a batch merged by the last to finish through "
                   "self-resetting counters), KV issued before kv_indptr",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
