// Seed handling of the official runner (spec: evaluation.md, "Modes").
#pragma once
#include <cstdint>
#include <optional>

namespace harness {

// Cantor pairing a + (a+b)(a+b+1)/2, used to combine a shape seed a with the secret seed b.
// Computed in unsigned 64-bit arithmetic: exact while (a+b)(a+b+1)/2 + a < 2^64 (e.g. a+b < 6e9),
// otherwise it wraps modulo 2^64 (the official runner's Python integers would not wrap).
uint64_t cantor_pair(uint64_t a, uint64_t b);

// The seed a shape starts from: its own seed (or the --seed override), paired with the secret if given.
uint64_t shape_seed(uint64_t shape_default, std::optional<uint64_t> override_seed,
                    std::optional<uint64_t> secret);

// Leaderboard mode advances the seed by this before every timed call.
constexpr uint64_t kLeaderboardSeedStep = 13;
// Seed of the i-th timed call (i from 0) in leaderboard mode.
inline uint64_t leaderboard_seed(uint64_t base, uint64_t i) { return base + (i + 1) * kLeaderboardSeedStep; }

}  // namespace harness
