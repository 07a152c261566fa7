// Host-side MXFP4 tensors: row quantizers for the two block rules and the shuffled layouts the
// official library's kernels read (moe_mxfp4.md "Shuffled layouts"), with their inverses.
#pragma once
#include <stdint.h>

#include <array>

#include "reference/numerics.hpp"

namespace numerics {

// x: rows x cols floats (cols a multiple of 32). packed: rows x cols/2 bytes (low nibble = even
// column). scales: row r's cols/32 bytes at scales + r * scale_stride; bytes beyond them (and any
// padding rows) are left untouched, so the caller zero-fills a padded layout.
void quantize_mxfp4_dynamic_rows(const float* x, int64_t rows, int64_t cols, uint8_t* packed, uint8_t* scales,
                                 int64_t scale_stride);
void quantize_mxfp4_per1x32_rows(const float* x, int64_t rows, int64_t cols, uint8_t* packed, uint8_t* scales,
                                 int64_t scale_stride);

// Weights [batch, n, k_bytes] (n a multiple of 16, k_bytes of 32): each 16-row x 32-byte tile is
// stored as its two 16x16-byte k-halves, each row-major, tiles ordered (n/16, k_bytes/32).
void shuffle_weight_16x16(const uint8_t* src, uint8_t* dst, int64_t batch, int64_t n, int64_t k_bytes);
void unshuffle_weight_16x16(const uint8_t* src, uint8_t* dst, int64_t batch, int64_t n, int64_t k_bytes);

inline int64_t pad_to(int64_t v, int64_t multiple) { return (v + multiple - 1) / multiple * multiple; }

// Scales [m, n] -> dst [pad_to(m, 256), pad_to(n, 8)] (padding is zero): inside each 32-row x
// 8-column block, (row 16h + i, col 4k + j) lands at offset ((j*16 + i)*2 + k)*2 + h.
void shuffle_scales(const uint8_t* src, int64_t m, int64_t n, uint8_t* dst);
// Inverse: the padded shuffled array -> the [m, n] scales.
void unshuffle_scales(const uint8_t* src, int64_t m, int64_t n, uint8_t* dst);


// Both e2m1 values of a packed byte (low nibble = even element) as T, for host dot products.
template <class T>
struct E2m1ByteLut {
  std::array<T, 256> lo{}, hi{};
  E2m1ByteLut() {
    for (int b = 0; b < 256; ++b) {
      lo[b] = e2m1_to_f32(static_cast<uint8_t>(b & 0xF));
      hi[b] = e2m1_to_f32(static_cast<uint8_t>(b >> 4));
    }
  }
};

}  // namespace numerics
