// Philox4x32-10 known answers (Random123 KAT vectors) and the normal draws built on it.
#include <cmath>
#include <cstdint>

#include "reference/philox.hpp"
#include "tests/catch.hpp"

using namespace numerics;

TEST_CASE("philox4x32-10: Random123 known-answer vectors") {
  const Philox4x32 zero = philox4x32_10(Philox4x32{{0, 0, 0, 0}}, 0, 0);
  CHECK(zero.v[0] == 0x6627e8d5u);
  CHECK(zero.v[1] == 0xe169c58du);
  CHECK(zero.v[2] == 0xbc57ac4cu);
  CHECK(zero.v[3] == 0x9b00dbd8u);
  const uint32_t f = 0xffffffffu;
  const Philox4x32 ones = philox4x32_10(Philox4x32{{f, f, f, f}}, f, f);
  CHECK(ones.v[0] == 0x408f276du);
  CHECK(ones.v[1] == 0x41c83b0eu);
  CHECK(ones.v[2] == 0xa20bc7c6u);
  CHECK(ones.v[3] == 0x6d5451fdu);
}

TEST_CASE("philox: counter layout is (index lo, index hi, tensor_id, 0), key (seed lo, seed hi)") {
  const uint64_t seed = 0x0123456789abcdefull, index = 0x00000005fedcba98ull;
  const Philox4x32 a = philox_block(seed, 42, index);
  const Philox4x32 b = philox4x32_10(Philox4x32{{0xfedcba98u, 0x5u, 42u, 0u}}, 0x89abcdefu, 0x01234567u);
  for (int i = 0; i < 4; ++i) CHECK(a.v[i] == b.v[i]);
  // The high halves matter: indices and seeds 2^32 apart differ.
  CHECK(philox_block(seed, 42, index).v[0] != philox_block(seed, 42, index + (1ull << 32)).v[0]);
  CHECK(philox_block(seed, 42, index).v[0] != philox_block(seed + (1ull << 32), 42, index).v[0]);
}

TEST_CASE("uniforms are in (0, 1]") {
  CHECK(uniform_open0_closed1(0, 0) == std::ldexp(1.0, -53));
  CHECK(uniform_open0_closed1(0xffffffffu, 0xffffffffu) == 1.0);
}

TEST_CASE("normal draws: mean ~0, std ~1, tails, over 1e6 draws") {
  const int n = 1000000;
  double sum = 0, sum_sq = 0, sum_4 = 0;
  int beyond_3 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = normal_f64(1234, 7, static_cast<uint64_t>(i));
    REQUIRE(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
    sum_4 += z * z * z * z;
    beyond_3 += std::fabs(z) > 3.0;
  }
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  CHECK(std::fabs(mean) < 0.005);             // std error 0.001
  CHECK(std::fabs(var - 1.0) < 0.006);        // std error 0.0014
  CHECK(std::fabs(sum_4 / n - 3.0) < 0.05);   // normal kurtosis; std error ~0.01
  CHECK(std::abs(beyond_3 - 2700) < 300);     // P(|z| > 3) = 0.0027
}

TEST_CASE("normal draws: distinct (seed, tensor_id) give different sequences; same ones repeat") {
  auto first_draws = [](uint64_t seed, uint32_t tensor) {
    uint64_t h = 0;
    for (uint64_t i = 0; i < 64; ++i) h = h * 1000003u + normal_bf16(seed, tensor, i);
    return h;
  };
  CHECK(first_draws(1, 0) == first_draws(1, 0));
  CHECK(first_draws(1, 0) != first_draws(2, 0));
  CHECK(first_draws(1, 0) != first_draws(1, 1));
  CHECK(first_draws(1, 1) != first_draws(2, 0));
  int equal_pairs = 0;
  for (uint64_t i = 0; i < 1000; ++i) equal_pairs += normal_f64(9, 0, i) == normal_f64(9, 1, i);
  CHECK(equal_pairs == 0);
}

TEST_CASE("normal_bf16 is the single RNE rounding of normal_f64") {
  for (uint64_t i = 0; i < 10000; ++i) {
    const double z = normal_f64(77, 3, i);
    const uint16_t b = normal_bf16(77, 3, i);
    REQUIRE(b == f64_to_bf16(z));
    // Within half a bf16 quantum (2^-8 relative) of the double.
    CHECK(std::fabs(static_cast<double>(bf16_to_f32(b)) - z) <= std::fabs(z) * std::ldexp(1.0, -8));
  }
}
