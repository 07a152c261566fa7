// Shared-memory tile of MXFP4 KV rows for the mla_decode matrix kernels (v4, v5, v7): Tile rows of 288
// packed bytes (padded to 304, an odd multiple of 16 bytes), then their 18 scale bytes each
// (padded to 20 so the copy moves whole words).
#pragma once
#include "problems/common/async_copy.h"
#include "problems/common/mla_mma_decode.h"

namespace mla_kernels {

template <int Tile>
struct Mxfp4Tile {
  static constexpr int kMmaTile = Tile;
  static constexpr int kPackedBytes = kDimQK / 2;      // 288
  static constexpr int kScales = kDimQK / 32;          // 18
  static constexpr int kRowBytes = kPackedBytes + 16;  // 304
  static constexpr int kScaleRowBytes = 20;
  static constexpr int kStageBytes = kMmaTile * (kRowBytes + kScaleRowBytes);
  static_assert(kStageBytes % 16 == 0, "stages must stay 16-byte aligned");

#if defined(HARNESS_GPU)
  __device__ static const unsigned char* scales(const unsigned char* st) { return st + kMmaTile * kRowBytes; }
  __device__ static uint32_t codes4(const unsigned char* st, int tok, int dim) {
    return *reinterpret_cast<const uint16_t*>(st + tok * kRowBytes + dim / 2);
  }
  __device__ static uint32_t scale_byte(const unsigned char* st, int tok, int dim) {
    return scales(st)[tok * kScaleRowBytes + dim / 32];
  }

  __device__ static void load(const MlaDecodeArgs& a, unsigned char* st, int64_t row0, int rows_valid, int tid,
                              int nthreads) {
    constexpr int kChunks = kPackedBytes / 16;
    for (int c = tid; c < kMmaTile * kChunks; c += nthreads) {
      const int r = c / kChunks, k = c % kChunks;
      const int64_t src = row0 + (r < rows_valid ? r : rows_valid - 1);  // past the end: repeat a valid row
      async_copy_16(st + r * kRowBytes + k * 16, a.kv_mxfp4 + src * kPackedBytes + k * 16);
    }
    unsigned char* sc = st + kMmaTile * kRowBytes;
    const int64_t stride = a.kv_mxfp4_scale_stride;
    if (stride % 4 == 0 && stride >= kScaleRowBytes) {  // whole words stay inside the scale row
      constexpr int kWords = kScaleRowBytes / 4;
      for (int c = tid; c < kMmaTile * kWords; c += nthreads) {
        const int r = c / kWords, k = c % kWords;
        const int64_t src = row0 + (r < rows_valid ? r : rows_valid - 1);
        async_copy_4(sc + r * kScaleRowBytes + 4 * k, a.kv_mxfp4_scale + src * stride + 4 * k);
      }
    } else {
      for (int c = tid; c < kMmaTile * kScales; c += nthreads) {
        const int r = c / kScales, k = c % kScales;
        const int64_t src = row0 + (r < rows_valid ? r : rows_valid - 1);
        sc[r * kScaleRowBytes + k] = a.kv_mxfp4_scale[src * stride + k];
      }
    }
  }
#endif
};

}  // namespace mla_kernels
