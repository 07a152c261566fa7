// Counter-based random numbers for input generation, identical on host and device:
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") with the standard
// constants, counter = (index lo, index hi, tensor_id, 0), key = (seed lo, seed hi), and one
// normal draw per counter by Box-Muller in double precision.
#pragma once
#include <math.h>
#include <stdint.h>

#include "problems/common/portability.h"
#include "reference/numerics.hpp"

namespace numerics {

struct Philox4x32 {
  uint32_t v[4];
};

HD inline Philox4x32 philox4x32_10(Philox4x32 ctr, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * ctr.v[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * ctr.v[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = Philox4x32{{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return ctr;
}

// The Philox block for one draw of tensor `tensor_id` at element `index`.
HD inline Philox4x32 philox_block(uint64_t seed, uint32_t tensor_id, uint64_t index) {
  const Philox4x32 ctr{{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), tensor_id, 0u}};
  return philox4x32_10(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Uniform in (0, 1]: a 53-bit integer (the top bits of hi:lo) plus one, times 2^-53. Never 0, so
// log() below is finite.
HD inline double uniform_open0_closed1(uint32_t lo, uint32_t hi) {
  const uint64_t x = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>((x >> 11) + 1) * (1.0 / 9007199254740992.0);
}

// Standard normal by Box-Muller (first output only): u1 from words 0-1, u2 from words 2-3.
HD inline double normal_f64(uint64_t seed, uint32_t tensor_id, uint64_t index) {
  const Philox4x32 r = philox_block(seed, tensor_id, index);
  const double u1 = uniform_open0_closed1(r.v[0], r.v[1]);
  const double u2 = uniform_open0_closed1(r.v[2], r.v[3]);
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return sqrt(-2.0 * log(u1)) * cos(kTwoPi * u2);
}

HD inline uint16_t normal_bf16(uint64_t seed, uint32_t tensor_id, uint64_t index) {
  return f64_to_bf16(normal_f64(seed, tensor_id, index));
}

}  // namespace numerics
