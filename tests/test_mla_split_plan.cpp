// The split plan of the mla_decode flash-decoding kernels (problems/common/mla_split_kv.h): host-only.
#include "tests/catch.hpp"

#include "problems/common/mla_split_kv.h"

using mla_kernels::plan_splits;

TEST_CASE("mla split plan: every split is non-empty, tile-aligned and covers the sequence") {
  for (int cus : {1, 8, 132, 256})
    for (int per_cu : {1, 2, 3})
      for (int tile : {32, 64})
        for (int bs : {1, 3, 4, 32, 64, 256, 1000})
          for (int kv : {1, 31, 64, 300, 1024, 8192, 20000}) {
            const auto p = plan_splits(bs, kv, cus, per_cu, tile, 128);
            INFO("cus " << cus << " per_cu " << per_cu << " tile " << tile << " bs " << bs << " kv " << kv);
            REQUIRE(p.splits >= 1);
            REQUIRE(p.splits <= mla_kernels::kMaxSplits);
            REQUIRE(p.tokens_per_split % tile == 0);
            REQUIRE(int64_t(p.splits) * p.tokens_per_split >= kv);
            REQUIRE(int64_t(p.splits - 1) * p.tokens_per_split < kv);
          }
}

TEST_CASE("mla split plan fills an H200 at small batch and does not split a full batch") {
  // 132 SMs, two resident blocks each: 264 slots.
  const auto small = plan_splits(4, 8192, 132, 2, 32, 128);
  CHECK(small.splits == 64);
  CHECK(small.tokens_per_split == 128);
  const auto big = plan_splits(256, 8192, 132, 2, 32, 128);
  CHECK(big.splits == 1);
  const auto mid = plan_splits(32, 8192, 132, 2, 32, 128);
  CHECK(mid.splits * 32 >= 240);  // at least ~one full wave of blocks
  CHECK(plan_splits(4, 0, 132, 2, 32, 128).splits == 1);
  CHECK(mla_kernels::partials_bytes(256, 1) == 0);
  CHECK(mla_kernels::partials_bytes(4, 64) == size_t(4) * 64 * 16 * 513 * sizeof(float));
}
