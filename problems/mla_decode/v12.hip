// v12: one launch per call on the latency-bound shapes (batch * kv_len <= 65536 tokens), v11 elsewhere.
// Kernel: problems/common/mla_fp8_cluster.h (v11's fp8 tile pipeline; blocks of a batch in thread-block
// clusters that merge their partial outputs through distributed shared memory; several clusters of a
// batch merged by the last one to finish, through self-resetting counters in a __device__ array; the
// first KV copies issued before kv_indptr arrives). Configurations (chosen from measurements on the
// H200, docs/perf-mla-small.md):
//   one cluster of 16 blocks a batch, 64 tokens a block, fits one wave (bs 4 / kv 1024):
//     8 warps, 64-token tiles, clusters of 16 (non-portable size), 2 blocks per SM;
//   otherwise (bs 4 / kv 8192, bs 32 / kv 1024, bs 64 / kv 1024):
//     4 warps, 32-token tiles, 2-stage ring, clusters of 8, 3 blocks per SM, splits from the cost model.
// v12q (measurement variant): v12 plus, on larger shapes whose plan is one wave of blocks of up to
// 4096 tokens, v11's regs8 block shape (8 warps, 5 stages, Q fragments in registers) with clusters of
// 2 or 4 merging the splits instead of v11's combine kernel.
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

// Cluster configurations <warps, stages, cluster, blocks per SM, Q in registers>.
using FA = mla_cluster::Fused<4, 2, 8, 3>;           // 32-token tiles
using FB16 = mla_cluster::Fused<8, 2, 16, 2>;        // 64-token tiles, clusters of 16
using FR4 = mla_cluster::Fused<8, 5, 4, 1, true>;    // v11's regs8 block, clusters of 4 (v12q)
using FR2 = mla_cluster::Fused<8, 5, 2, 1, true>;    // v11's regs8 block, clusters of 2 (v12q)
constexpr int64_t kFusedTokens = 65536;  // batch * kv_len up to which the cluster path runs

enum class Cfg { v11, fa, fb16, fr4, fr2 };
struct Choice {
  Cfg cfg = Cfg::v11;
  mla_cluster::ClusterPlan plan;
};

Choice pick12(const MlaDecodeConfig& c) {
  Choice ch;
  if (int64_t(c.batch_size) * c.kv_seq_len > kFusedTokens) return ch;
  const mla_cluster::ClusterPlan p16 = FB16::plan(c);
  if (p16.ok() && p16.nclus == 1 && p16.waves == 1 && p16.tokens_per_split <= 64) return {Cfg::fb16, p16};
  const mla_cluster::ClusterPlan pa = FA::plan(c);
  if (pa.ok()) return {Cfg::fa, pa};
  return ch;
}
Choice pick12q(const MlaDecodeConfig& c) {
  const Choice ch = pick12(c);
  if (ch.cfg != Cfg::v11 || int64_t(c.batch_size) * c.kv_seq_len <= kFusedTokens) return ch;
  Choice best;
  const mla_cluster::ClusterPlan p4 = FR4::plan(c, 4096), p2 = FR2::plan(c, 4096);
  if (p4.ok() && p4.waves == 1) best = {Cfg::fr4, p4};
  if (p2.ok() && p2.waves == 1 && (best.cfg == Cfg::v11 || p2.cost < best.plan.cost)) best = {Cfg::fr2, p2};
  return best;
}
size_t ws_of(const Choice& ch, const MlaDecodeConfig& c) {
  switch (ch.cfg) {
    case Cfg::fa: return FA::workspace_bytes(ch.plan, c);
    case Cfg::fb16: return FB16::workspace_bytes(ch.plan, c);
    case Cfg::fr4: return FR4::workspace_bytes(ch.plan, c);
    case Cfg::fr2: return FR2::workspace_bytes(ch.plan, c);
    default: return ws11(c);
  }
}
void launch_of(const Choice& ch, const MlaDecodeArgs& a) {
  switch (ch.cfg) {
    case Cfg::fa: FA::launch(a, ch.plan, "mla_fp8_cluster_kernel<4, 2, 8, 3>"); break;
    case Cfg::fb16: FB16::launch(a, ch.plan, "mla_fp8_cluster_kernel<8, 2, 16, 2>"); break;
    case Cfg::fr4: FR4::launch(a, ch.plan, "mla_fp8_cluster_kernel<8, 5, 4, 1, QR>"); break;
    case Cfg::fr2: FR2::launch(a, ch.plan, "mla_fp8_cluster_kernel<8, 5, 2, 1, QR>"); break;
    default: launch11(a); break;
  }
}
size_t workspace_bytes(const MlaDecodeConfig& c) { return ws_of(pick12(c), c); }
void launch(const MlaDecodeArgs& a) { launch_of(pick12(a.cfg), a); }
size_t workspace_bytes_q(const MlaDecodeConfig& c) { return ws_of(pick12q(c), c); }
void launch_q(const MlaDecodeArgs& a) { launch_of(pick12q(a.cfg), a); }
#endif

}  // namespace

MLA_DECODE_VARIANT("v12", gpu,
                   "v11 on the large shapes; batch * kv <= 65536 tokens: one launch, blocks of 32-64 tokens in "
                   "thread-block clusters merging partials through distributed shared memory (16 a batch: 64-token "
                   "blocks; else 8 a cluster, 4 warps, clusters of a batch merged by the last to finish through "
                   "self-resetting counters), KV issued before kv_indptr",
                   "q,kv_fp8,kv_fp8_scale,kv_indptr", 0);
#if !defined(HARNESS_SUBMISSION) && !defined(__HIP_PLATFORM_AMD__)
HARNESS_REGISTER_VARIANT("mla_decode", MlaDecodeConfig, MlaDecodeArgs, "v12q", ::harness::Backend::gpu,
                         "v12 measurement: plus v11's regs8 block with clusters of 2-4 instead of the combine kernel "
                         "on one-wave plans of larger shapes",
                         "q,kv_fp8,kv_fp8_scale,kv_indptr", workspace_bytes_q, launch_q, 0);
#endif
