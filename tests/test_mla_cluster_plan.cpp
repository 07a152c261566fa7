// The split plan of the one-launch cluster kernels of mla_decode v12/v14/v15
// (problems/common/mla_fp8_cluster.h, plan_cluster): host-only invariants, and the plan the measured
// configuration gets on the H200 at bs 4 / kv 1024.
#include <cmath>

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
