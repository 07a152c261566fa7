// MXFP4 KV format policy with the block scales kept out of the per-element decode, for the
// mla_decode matrix kernel (mla_mma_decode.h); used by v5 and v7. Codes become f16 values
// (e2m1 * 2^-14) by moving bits; for S = Q K^T each k-step's product (16 dims, one scale block) is
// multiplied by its token's scale in fp32; for P V each token pair of a V fragment is multiplied
// (f16, exact powers of two) by 2^(scale - ref), where ref is the largest V scale seen so far, and
// the accumulator carries 2^ref. Q and P are f16.
#pragma once
#include "problems/common/mla_mxfp4_tile.h"

namespace mla_kernels {

template <class G, int Stages, int MinBlocks>
struct KvMxfp4SplitFormat : Mxfp4Tile<G::kTile> {
  using Geo = G;
  using Tile = Mxfp4Tile<G::kTile>;
  using Tile::kMmaTile;
  using Tile::kRowBytes;
  using Tile::kScaleRowBytes;
  using Tile::codes4;
  using Tile::scale_byte;
  using Tile::scales;
  static constexpr bool kBlockScaled = true;
  static constexpr mma::Elem kElem = mma::Elem::f16;
  static constexpr int kStages = Stages;
  static constexpr int kMinBlocks = MinBlocks;
#if defined(__HIP_PLATFORM_AMD__)
  static constexpr size_t kMaxSmemPerCu = 64 * 1024;
#else
  static constexpr size_t kMaxSmemPerCu = 227 * 1024;
#endif

#if defined(HARNESS_GPU)
  __device__ static float dequant(const MlaDecodeArgs&) { return 1.f; }
  __device__ static uint16_t from_f32(float x) { return f32_to_f16_bits(x); }
  __device__ static uint2 convert_q(uint2 bf16x4) {
    auto cvt = [](uint32_t w) {
      return pack16(f32_to_f16_bits(__uint_as_float(w << 16)), f32_to_f16_bits(__uint_as_float(w & 0xffff0000u)));
    };
    return make_uint2(cvt(bf16x4.x), cvt(bf16x4.y));
  }
  __device__ static void load_tile(const MlaDecodeArgs& a, unsigned char* st, int64_t row0, int rows_valid, int tid,
                                   int nthreads) {
    Tile::load(a, st, row0, rows_valid, tid, nthreads);
  }
  // K fragment without its scale: dims dim..dim+3 of token tok, as e2m1 * 2^-14.
  __device__ static mma::FragB qk_b(const unsigned char* st, int tok, int dim) {
    return e2m1x4_to_f16x4_scaled(codes4(st, tok, dim));
  }
  // Factor restoring one k-step's product for token tok: 2^(byte - 127 + 14).
  __device__ static float qk_scale(const unsigned char* st, int tok, int dim) {
    return __uint_as_float((scale_byte(st, tok, dim) + 14u) << 23);
  }
  // Largest scale byte among the tile's V blocks (first 16 of 18), over the whole warp.
  __device__ static int tile_ref(const unsigned char* st, int lane) {
    constexpr int kWords = kDimV / 32 / 4;  // 4 words of V scales per row
    uint32_t mx = 0;
    for (int w = lane; w < kMmaTile * kWords; w += kernel_warp_size()) {
      const uint32_t x = *reinterpret_cast<const uint32_t*>(scales(st) + (w / kWords) * kScaleRowBytes + 4 * (w % kWords));
      mx = max(mx, max(max(x & 0xffu, (x >> 8) & 0xffu), max((x >> 16) & 0xffu, x >> 24)));
    }
    return int(warp_max(float(mx)));
  }
  // V fragments: out[j] holds dim + j of tokens tok0..tok0+3, times 2^(scale - ref - 14 + ...):
  // value = e2m1 * 2^(byte - ref) * 2^-14, i.e. the true value * 2^(127 - 14 - ref).
  __device__ static void pv_b(const unsigned char* st, int tok0, int dim, mma::FragB out[4], int ref) {
    uint2 w[4];
    uint32_t m[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      w[r] = e2m1x4_to_f16x4_scaled(codes4(st, tok0 + r, dim));
      m[r] = f16_pow2_bits(int(scale_byte(st, tok0 + r, dim)) - ref);
    }
    const uint32_t m01 = m[0] | (m[1] << 16), m23 = m[2] | (m[3] << 16);
    // 16-bit transpose: element j of tokens (0, 1) and (2, 3).
    out[0] = make_uint2(hmul2_bits(byte_perm(w[0].x, w[1].x, 0x5410u), m01), hmul2_bits(byte_perm(w[2].x, w[3].x, 0x5410u), m23));
    out[1] = make_uint2(hmul2_bits(byte_perm(w[0].x, w[1].x, 0x7632u), m01), hmul2_bits(byte_perm(w[2].x, w[3].x, 0x7632u), m23));
    out[2] = make_uint2(hmul2_bits(byte_perm(w[0].y, w[1].y, 0x5410u), m01), hmul2_bits(byte_perm(w[2].y, w[3].y, 0x5410u), m23));
    out[3] = make_uint2(hmul2_bits(byte_perm(w[0].y, w[1].y, 0x7632u), m01), hmul2_bits(byte_perm(w[2].y, w[3].y, 0x7632u), m23));
  }
  // Output factor: acc * 2^(ref + 14 - 127) is the true value.
  __device__ static float out_scale(int ref) { return ldexpf(1.f, ref + 14 - 127); }
#endif
};

}  // namespace mla_kernels
