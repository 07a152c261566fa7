// Per-element input generation for mla_decode, shared by the host generator (task.cpp) and the
// GPU generator (gpu/generate.hip) so that both produce the same bits.
//
// Random tensor ids for numerics::normal_bf16(seed, tensor_id, index):
//   0 = q        (index = flat element index of (total_q, 16, 576))
//   1 = kv_bf16  (index = flat element index of (total_kv, 1, 576))
// Everything else is derived from kv_bf16 by exact IEEE arithmetic.
#pragma once
#include <stdint.h>

#include "problems/common/portability.h"
#include "reference/numerics.hpp"
#include "reference/philox.hpp"

namespace mla_gen {

constexpr uint32_t kTensorQ = 0;
constexpr uint32_t kTensorKv = 1;
constexpr int kHeads = 16;
constexpr int kQkDim = 576;
constexpr int kBlock = 32;                       // MXFP4 block along the 576 dims
constexpr int kBlocksPerRow = kQkDim / kBlock;   // 18
constexpr int kPackedPerRow = kQkDim / 2;        // 288 bytes of e2m1 pairs
constexpr int kScaleStride = 24;                 // official padded scale row (18 used)
constexpr int64_t kScaleRowPad = 256;            // scale rows padded to a multiple of this

HD inline int64_t pad_scale_rows(int64_t rows) { return (rows + kScaleRowPad - 1) / kScaleRowPad * kScaleRowPad; }

HD inline uint16_t q_bits(uint64_t seed, uint64_t i) { return numerics::normal_bf16(seed, kTensorQ, i); }
HD inline uint16_t kv_bits(uint64_t seed, uint64_t i) { return numerics::normal_bf16(seed, kTensorKv, i); }

HD inline float abs_value(uint16_t bf16) { return numerics::bf16_to_f32(static_cast<uint16_t>(bf16 & 0x7FFFu)); }

// fp8, per tensor. The official code does this arithmetic on bf16 tensors: the scale is
// bf16(amax / 448) (then stored as fp32) and each element is bf16(kv / scale) before the e4m3fn
// cast. Golden vectors (tests/data/golden/mla_*) match this bit for bit and do not match an fp32
// scale or an fp32 quotient (1574 of 73728 codes differ on mla_bs2_kv64). amax is at least 1e-12.
HD inline float fp8_scale_from_amax(float amax) {
  const float a = amax < 1e-12f ? 1e-12f : amax;
  return numerics::bf16_to_f32(numerics::f32_to_bf16(a / 448.0f));
}

// One fp8 element, RNE and saturating. Plain '/' is the correctly rounded IEEE division on the
// host, in nvcc (default -prec-div=true) and in HIP clang (correctly rounded fp32 division is its
// default); no build here uses fast-math.
HD inline uint8_t fp8_code(uint16_t kv, float scale) {
  const float quotient = numerics::bf16_to_f32(numerics::f32_to_bf16(numerics::bf16_to_f32(kv) / scale));
  return numerics::f32_to_fp8_e4m3fn(quotient);
}

// One MXFP4 block of 32 bf16 values (dynamic rule): 16 packed bytes and one e8m0 scale byte.
HD inline void mxfp4_block(const uint16_t* kv32, uint8_t* packed16, uint8_t* scale_byte) {
  float x[kBlock];
  for (int j = 0; j < kBlock; ++j) x[j] = numerics::bf16_to_f32(kv32[j]);
  numerics::quantize_block32_dynamic(x, packed16, scale_byte);
}

HD inline int32_t indptr_value(int64_t i, int64_t len) { return static_cast<int32_t>(i * len); }

}  // namespace mla_gen
