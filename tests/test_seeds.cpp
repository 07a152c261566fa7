#include "harness/seeds.hpp"
#include "tests/catch.hpp"

using namespace harness;

TEST_CASE("cantor pairing a + (a+b)(a+b+1)/2") {
  CHECK(cantor_pair(0, 0) == 0);
  CHECK(cantor_pair(1, 0) == 2);
  CHECK(cantor_pair(0, 1) == 1);
  CHECK(cantor_pair(4220, 0) == 4220 + 4220ull * 4221 / 2);
  CHECK(cantor_pair(4220, 12345) == 4220 + 16565ull * 16566 / 2);
  CHECK(cantor_pair(4220, 12345) == 137212115ull);
  // Large values: exact while the result fits 64 bits (odd n = 2^32 - 1 here, even n below).
  const uint64_t n = 0xFFFFFFFFull;
  CHECK(cantor_pair(5, n - 5) == static_cast<uint64_t>(static_cast<unsigned __int128>(n) * (n + 1) / 2 + 5));
  // Wraps modulo 2^64 (documented), without losing the exact division by 2.
  const uint64_t big = 1ull << 40;
  const unsigned __int128 exact = static_cast<unsigned __int128>(big) * (big + 1) / 2 + 3;
  CHECK(cantor_pair(3, big - 3) == static_cast<uint64_t>(exact));
}

TEST_CASE("shape seeds: override, secret, leaderboard +13 sequence") {
  CHECK(shape_seed(4220, std::nullopt, std::nullopt) == 4220);
  CHECK(shape_seed(4220, 7, std::nullopt) == 7);
  CHECK(shape_seed(4220, std::nullopt, 12345) == 137212115ull);
  CHECK(shape_seed(4220, 7, 1) == cantor_pair(7, 1));
  CHECK(leaderboard_seed(4220, 0) == 4233);
  CHECK(leaderboard_seed(4220, 1) == 4246);
  CHECK(leaderboard_seed(4220, 99) == 4220 + 100 * 13);
}
