// The split plan of the one-launch cluster kernels of mla_decode v12/v14-v16
// (problems/common/mla_fp8_cluster.h, plan_cluster): host-only invariants, and the plan the measured
// configuration gets on the H200 at bs 4 / kv 1024.
#include <cmath>
#include <utility>

#include "problems/common/mla_fp8_cluster.h"
#include "tests/catch.hpp"

using mla_cluster::plan_cluster;

TEST_CASE("mla cluster plan: whole clusters, tile-aligned blocks, no empty cluster, the sequence covered") {
  for (int slots : {1, 132, 264, 396})
    for (int T : {32, 64})
      for (int C : {2, 8, 16})
        for (int bs : {1, 4, 32, 64, 256})
          for (int kv : {1, 33, 1024, 5000, 8192})
            for (int max_tokens : {64, 1024, 4096}) {
              INFO("slots " << slots << " T " << T << " C " << C << " bs " << bs << " kv " << kv << " max " << max_tokens);
              const auto p = plan_cluster(bs, kv, slots, 1, T, C, max_tokens);
              if (!p.ok()) {  // only when even 16 clusters of C blocks need blocks over max_tokens
                const int per16 = ((kv + 16 * C - 1) / (16 * C) + T - 1) / T * T;
                CHECK(per16 > max_tokens);
                continue;
              }
              CHECK(p.nclus >= 1);
              CHECK(p.nclus <= mla_cluster::kMaxClusters);
              CHECK(p.splits == C * p.nclus);
              CHECK(p.tokens_per_split % T == 0);
              CHECK(p.tokens_per_split <= max_tokens);
              CHECK(int64_t(p.splits) * p.tokens_per_split >= kv);
              CHECK(int64_t(C) * (p.nclus - 1) * p.tokens_per_split < kv);  // the last cluster has tokens
              CHECK(p.waves == int(std::ceil(double(bs) * p.splits / slots)));
            }
}

TEST_CASE("mla cluster plan: refuses what the kernel cannot take") {
  CHECK_FALSE(plan_cluster(4, 0, 132, 1, 64, 16, 1024).ok());
  CHECK_FALSE(plan_cluster(0, 1024, 132, 1, 64, 16, 1024).ok());
  CHECK_FALSE(plan_cluster(mla_cluster::kMaxCounters / 16 + 1, 1024, 132, 1, 64, 16, 1024).ok());  // counters
  CHECK_FALSE(plan_cluster(4, 1 << 20, 132, 1, 64, 16, 1024).ok());  // blocks would exceed max_tokens
}

TEST_CASE("mla cluster plan: bs 4 / kv 1024 on 264 slots is one cluster of 16 blocks of 64 tokens") {
  // v12's measured configuration (8 warps, clusters of 16, 2 blocks per SM on 132 SMs).
  const auto p = plan_cluster(4, 1024, 264, 1, 64, 16, 1024);
  REQUIRE(p.ok());
  CHECK(p.nclus == 1);
  CHECK(p.splits == 16);
  CHECK(p.tokens_per_split == 64);
  CHECK(p.waves == 1);
}

TEST_CASE("mla cluster plan: a merge cost per cluster picks v16's measured plans") {
  // v16's dims-tile clusters: one 8-warp block per SM, 64-token tiles; the H200's resident blocks for
  // clusters of 2 / 4 / 8 / 16 were 132 / 120 / 120 / 112; the merge costs 48 + 8 k token rows.
  struct Pick {
    int c = 0;
    mla_cluster::ClusterPlan plan;
  };
  const mla_cluster::MergeCost merge{48, 8};
  auto pick = [&](int bs, int kv) {  // the least cost over cluster sizes, ties to the larger (Family::pick)
    Pick best;
    for (auto [c, slots] : {std::pair{16, 112}, {8, 120}, {4, 120}, {2, 132}}) {
      const auto p = plan_cluster(bs, kv, slots, 1, 64, c, 4096, merge);
      if (p.ok() && (best.c == 0 || p.cost < best.plan.cost)) best = {c, p};
    }
    return best;
  };
  const Pick a = pick(4, 1024);
  CHECK((a.c == 16 && a.plan.nclus == 1 && a.plan.tokens_per_split == 64));
  const Pick b = pick(4, 8192);  // 7 clusters of 4 a batch: 112 blocks
  CHECK((b.c == 4 && b.plan.nclus == 7 && b.plan.tokens_per_split == 320 && b.plan.waves == 1));
  const Pick c = pick(32, 1024);  // 2 clusters of 2 a batch
  CHECK((c.c == 2 && c.plan.nclus == 2 && c.plan.tokens_per_split == 256));
  // The per-cluster term moves a plan towards fewer clusters: v12's model (48 flat) splits bs 4 / kv 8192
  // at least as finely.
  const auto flat = plan_cluster(4, 8192, 120, 1, 64, 4, 4096);
  const auto costly = plan_cluster(4, 8192, 120, 1, 64, 4, 4096, {48, 64});
  CHECK(flat.nclus >= b.plan.nclus);
  CHECK(costly.nclus <= b.plan.nclus);
  CHECK(costly.cost >= b.plan.cost);
}
