// v4: v3's design (mla_mma_decode.h) reading MXFP4 KV: e2m1 codes, two per byte, and one e8m0
// scale per 32 dims (18 per row, row stride args.kv_mxfp4_scale_stride). Each code times its
// block scale becomes one exact bf16 value in registers; Q stays bf16 and P is rounded to bf16;
// matrix instructions accumulate in fp32.
#include "problems/common/mla_mma_decode.h"

namespace {

using namespace mla_kernels;

struct KvMxfp4 {
  static constexpr mma::Elem kElem = mma::Elem::bf16;
  static constexpr int kPackedBytes = kDimQK / 2;            // 288
  static constexpr int kScales = kDimQK / 32;                // 18
  static constexpr int kRowBytes = kPackedBytes + 16;        // odd multiple of 16 bytes
  static constexpr int kScaleRowBytes = 20;                  // 18 scales, padded to whole words
  static constexpr int kStageBytes = kMmaTile * (kRowBytes + kScaleRowBytes);
#if defined(__HIP_PLATFORM_AMD__)
  static constexpr int kStages = 4;
  static constexpr size_t kMaxSmemPerCu = 64 * 1024;
#else
  static constexpr int kStages = 6;
  static constexpr size_t kMaxSmemPerCu = 227 * 1024;
#endif
  static_assert(kStageBytes % 16 == 0, "stages must stay 16-byte aligned");

#if defined(HARNESS_GPU)
  __device__ static float dequant(const MlaDecodeArgs&) { return 1.f; }
  __device__ static uint16_t from_f32(float x) { return f32_to_bf16_bits(x); }
  __device__ static uint2 convert_q(uint2 bf16x4) { return bf16x4; }
  __device__ static const unsigned char* scales(const unsigned char* st) { return st + kMmaTile * kRowBytes; }

  __device__ static void load_tile(const MlaDecodeArgs& a, unsigned char* st, int64_t row0, int rows_valid, int tid,
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
  // K fragment: dims dim..dim+3 of token tok (one scale block: dim is a multiple of 4).
  __device__ static mma::FragB qk_b(const unsigned char* st, int tok, int dim) {
    const uint32_t codes = *reinterpret_cast<const uint16_t*>(st + tok * kRowBytes + dim / 2);
    const uint32_t sb = scales(st)[tok * kScaleRowBytes + dim / 32];
    return make_uint2(pack16(e2m1_scaled_to_bf16_bits(codes, sb), e2m1_scaled_to_bf16_bits(codes >> 4, sb)),
                      pack16(e2m1_scaled_to_bf16_bits(codes >> 8, sb), e2m1_scaled_to_bf16_bits(codes >> 12, sb)));
  }
  // V fragments: out[j] holds dim + j of tokens tok0..tok0+3.
  __device__ static void pv_b(const unsigned char* st, int tok0, int dim, mma::FragB out[4]) {
    uint16_t v[4][4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const uint32_t codes = *reinterpret_cast<const uint16_t*>(st + (tok0 + r) * kRowBytes + dim / 2);
      const uint32_t sb = scales(st)[(tok0 + r) * kScaleRowBytes + dim / 32];
#pragma unroll
      for (int j = 0; j < 4; ++j) v[r][j] = e2m1_scaled_to_bf16_bits(codes >> (4 * j), sb);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) out[j] = make_uint2(pack16(v[0][j], v[1][j]), pack16(v[2][j], v[3][j]));
  }
#endif
};

size_t workspace_bytes(const MlaDecodeConfig& c) { return mma_workspace_bytes<KvMxfp4>(c); }
void launch(const MlaDecodeArgs& a) { mma_launch<KvMxfp4>(a, "mla_mma_kernel<mxfp4>"); }

}  // namespace

MLA_DECODE_VARIANT("v4", gpu,
                   "split-KV flash decoding on MXFP4 KV: codes and block scales decoded to bf16 in registers, bf16 "
                   "matrix instructions, cp.async pipeline, combine kernel",
                   "q,kv_mxfp4,kv_mxfp4_scale,kv_indptr", 0);
