// v4: v3's design (mla_mma_decode.h) reading MXFP4 KV: e2m1 codes, two per byte, and one e8m0
// scale per 32 dims (18 per row, row stride args.kv_mxfp4_scale_stride). Each code times its
// block scale becomes one exact bf16 value in registers; Q stays bf16 and P is rounded to bf16;
// matrix instructions accumulate in fp32.
#include "problems/common/mla_mxfp4_tile.h"

namespace {

using namespace mla_kernels;

struct KvMxfp4 : Mxfp4Tile<32> {
  using Geo = MmaGeo<4, 32>;
  static constexpr bool kBlockScaled = false;
  static constexpr mma::Elem kElem = mma::Elem::bf16;
#if defined(__HIP_PLATFORM_AMD__)
  static constexpr int kStages = 4;
  static constexpr size_t kMaxSmemPerCu = 64 * 1024;
#else
  static constexpr int kStages = 6;
  static constexpr size_t kMaxSmemPerCu = 227 * 1024;
#endif
  static constexpr int kMinBlocks = 2;

#if defined(HARNESS_GPU)
  __device__ static float dequant(const MlaDecodeArgs&) { return 1.f; }
  __device__ static uint16_t from_f32(float x) { return f32_to_bf16_bits(x); }
  __device__ static uint2 convert_q(uint2 bf16x4) { return bf16x4; }
  __device__ static void load_tile(const MlaDecodeArgs& a, unsigned char* st, int64_t row0, int rows_valid, int tid,
                                   int nthreads) {
    load(a, st, row0, rows_valid, tid, nthreads);
  }
  // K fragment: dims dim..dim+3 of token tok (one scale block: dim is a multiple of 4).
  __device__ static mma::FragB qk_b(const unsigned char* st, int tok, int dim) {
    const uint32_t codes = codes4(st, tok, dim), sb = scale_byte(st, tok, dim);
    return make_uint2(pack16(e2m1_scaled_to_bf16_bits(codes, sb), e2m1_scaled_to_bf16_bits(codes >> 4, sb)),
                      pack16(e2m1_scaled_to_bf16_bits(codes >> 8, sb), e2m1_scaled_to_bf16_bits(codes >> 12, sb)));
  }
  // V fragments: out[j] holds dim + j of tokens tok0..tok0+3.
  __device__ static void pv_b(const unsigned char* st, int tok0, int dim, mma::FragB out[4]) {
    uint16_t v[4][4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const uint32_t codes = codes4(st, tok0 + r, dim), sb = scale_byte(st, tok0 + r, dim);
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
