#include "reference/mxfp4.hpp"

#include <cassert>
#include <cstring>

#include "reference/numerics.hpp"

namespace numerics {
namespace {

using BlockQuantizer = void (*)(const float*, uint8_t*, uint8_t*);

void quantize_rows(BlockQuantizer quantize_block, const float* x, int64_t rows, int64_t cols, uint8_t* packed,
                   uint8_t* scales, int64_t scale_stride) {
  assert(cols % 32 == 0 && scale_stride >= cols / 32);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols / 32; ++b) {
      quantize_block(x + r * cols + b * 32, packed + r * (cols / 2) + b * 16, scales + r * scale_stride + b);
    }
  }
}

// Offset of byte (row, k) of a [n, k_bytes] matrix in the 16x16 shuffled layout.
int64_t shuffled_weight_offset(int64_t row, int64_t k, int64_t k_bytes) {
  const int64_t n1 = row / 16, i = row % 16;
  const int64_t k1 = k / 32, h = (k / 16) % 2, j = k % 16;
  return ((n1 * (k_bytes / 32) + k1) * 2 + h) * 256 + i * 16 + j;
}

// Offset of scale (row, col) in the shuffled layout of a [pm, pn] padded array.
int64_t shuffled_scale_offset(int64_t row, int64_t col, int64_t pn) {
  const int64_t r0 = row / 32, h = (row / 16) % 2, i = row % 16;
  const int64_t c0 = col / 8, k = (col / 4) % 2, j = col % 4;
  return (r0 * (pn / 8) + c0) * 256 + ((j * 16 + i) * 2 + k) * 2 + h;
}

}  // namespace

void quantize_mxfp4_dynamic_rows(const float* x, int64_t rows, int64_t cols, uint8_t* packed, uint8_t* scales,
                                 int64_t scale_stride) {
  quantize_rows(quantize_block32_dynamic, x, rows, cols, packed, scales, scale_stride);
}

void quantize_mxfp4_per1x32_rows(const float* x, int64_t rows, int64_t cols, uint8_t* packed, uint8_t* scales,
                                 int64_t scale_stride) {
  quantize_rows(quantize_block32_per1x32, x, rows, cols, packed, scales, scale_stride);
}

void shuffle_weight_16x16(const uint8_t* src, uint8_t* dst, int64_t batch, int64_t n, int64_t k_bytes) {
  assert(n % 16 == 0 && k_bytes % 32 == 0);
  const int64_t per_batch = n * k_bytes;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t row = 0; row < n; ++row)
      for (int64_t k = 0; k < k_bytes; ++k)
        dst[b * per_batch + shuffled_weight_offset(row, k, k_bytes)] = src[b * per_batch + row * k_bytes + k];
}

void unshuffle_weight_16x16(const uint8_t* src, uint8_t* dst, int64_t batch, int64_t n, int64_t k_bytes) {
  assert(n % 16 == 0 && k_bytes % 32 == 0);
  const int64_t per_batch = n * k_bytes;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t row = 0; row < n; ++row)
      for (int64_t k = 0; k < k_bytes; ++k)
        dst[b * per_batch + row * k_bytes + k] = src[b * per_batch + shuffled_weight_offset(row, k, k_bytes)];
}

void shuffle_scales(const uint8_t* src, int64_t m, int64_t n, uint8_t* dst) {
  const int64_t pm = pad_to(m, 256), pn = pad_to(n, 8);
  std::memset(dst, 0, static_cast<size_t>(pm * pn));
  for (int64_t row = 0; row < m; ++row)
    for (int64_t col = 0; col < n; ++col) dst[shuffled_scale_offset(row, col, pn)] = src[row * n + col];
}

void unshuffle_scales(const uint8_t* src, int64_t m, int64_t n, uint8_t* dst) {
  const int64_t pn = pad_to(n, 8);
  for (int64_t row = 0; row < m; ++row)
    for (int64_t col = 0; col < n; ++col) dst[row * n + col] = src[shuffled_scale_offset(row, col, pn)];
}

}  // namespace numerics
