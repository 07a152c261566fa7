// fp8 KV format policy for the mla_decode matrix kernel (mla_mma_decode.h), used by v3 and v6.
// fp8 bytes become f16 values equal to fp8 * 2^-8 (exact, subnormals included), by moving bits or,
// with HwConvert on NVIDIA sm_89+, by the hardware conversion; the per-tensor scale and the 2^8 are
// folded into the logits' scale and the output. Q is converted once from bf16 to f16 (exact for
// |q| >= 2^-14). Rows are padded to 592 bytes (an odd multiple of 16: no bank conflicts).
#pragma once
#include "problems/common/mla_mma_decode.h"

namespace mla_kernels {

template <class G, int Stages, int MinBlocks, bool HwConvert>
struct KvFp8Format {
  using Geo = G;
  static constexpr int kMmaTile = Geo::kTile;
  static constexpr bool kBlockScaled = false;
  static constexpr mma::Elem kElem = mma::Elem::f16;
  static constexpr int kRowBytes = kDimQK + 16;  // 16-byte aligned, odd multiple of 16: no bank conflicts
  static constexpr int kStageBytes = kMmaTile * kRowBytes;
  static constexpr int kStages = Stages;
  static constexpr int kMinBlocks = MinBlocks;
#if defined(__HIP_PLATFORM_AMD__)
  static constexpr size_t kMaxSmemPerCu = 64 * 1024;
#else
  static constexpr size_t kMaxSmemPerCu = 227 * 1024;
#endif

#if defined(HARNESS_GPU)
  __device__ static float dequant(const MlaDecodeArgs& a) { return *a.kv_fp8_scale * 256.f; }
  __device__ static uint16_t from_f32(float x) { return f32_to_f16_bits(x); }
  __device__ static uint2 convert_q(uint2 bf16x4) {
    auto cvt = [](uint32_t w) {
      return pack16(f32_to_f16_bits(__uint_as_float(w << 16)), f32_to_f16_bits(__uint_as_float(w & 0xffff0000u)));
    };
    return make_uint2(cvt(bf16x4.x), cvt(bf16x4.y));
  }
  __device__ static void load_tile(const MlaDecodeArgs& a, unsigned char* st, int64_t row0, int rows_valid, int tid,
                                   int nthreads) {
    constexpr int kChunks = kDimQK / 16;
    for (int c = tid; c < kMmaTile * kChunks; c += nthreads) {
      const int r = c / kChunks, k = c % kChunks;
      const int64_t src = row0 + (r < rows_valid ? r : rows_valid - 1);  // past the end: repeat a valid row
      async_copy_16(st + r * kRowBytes + k * 16, a.kv_fp8 + src * kDimQK + k * 16);
    }
  }
  __device__ static uint2 convert(uint32_t w) {
    return HwConvert ? fp8x4_to_f16x4_scaled_hw(w) : fp8x4_to_f16x4_scaled(w);
  }
  // K fragment: dims dim..dim+3 of token tok.
  __device__ static mma::FragB qk_b(const unsigned char* st, int tok, int dim) {
    return convert(*reinterpret_cast<const uint32_t*>(st + tok * kRowBytes + dim));
  }
  // V fragments: out[j] holds dim + j of tokens tok0..tok0+3.
  __device__ static void pv_b(const unsigned char* st, int tok0, int dim, mma::FragB out[4]) {
    uint32_t w[4], t[4];
    for (int r = 0; r < 4; ++r) w[r] = *reinterpret_cast<const uint32_t*>(st + (tok0 + r) * kRowBytes + dim);
    transpose_bytes_4x4(w, t);
    for (int j = 0; j < 4; ++j) out[j] = convert(t[j]);
  }
#endif
};

}  // namespace mla_kernels
