#include "harness/seeds.hpp"

namespace harness {

uint64_t cantor_pair(uint64_t a, uint64_t b) {
  const uint64_t n = a + b;
  // Halve whichever of n, n+1 is even before multiplying, so the division is exact even when
  // the product wraps.
  const uint64_t tri = (n % 2 == 0) ? (n / 2) * (n + 1) : n * ((n + 1) / 2);
  return a + tri;
}

uint64_t shape_seed(uint64_t shape_default, std::optional<uint64_t> override_seed,
                    std::optional<uint64_t> secret) {
  const uint64_t a = override_seed.value_or(shape_default);
  return secret ? cantor_pair(a, *secret) : a;
}

}  // namespace harness
