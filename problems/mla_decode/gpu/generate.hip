// GPU generator for mla_decode: the same per-element functions as the host (generate.h), so the
// device inputs are bit-identical to MlaDecodeProblem::generate.
#include "harness/gpu/check.hpp"
#include "harness/gpu/device_generators.hpp"
#include "problems/common/portability.h"
#include "problems/mla_decode/generate.h"

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;  // grid-stride beyond this

int grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

__global__ void gen_q(uint16_t* q, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    q[i] = mla_gen::q_bits(seed, static_cast<uint64_t>(i));
}

// Writes kv and folds max|kv| into *amax_bits (non-negative floats order like their bit patterns,
// and max is order-independent, so the result is exact whatever the schedule).
__global__ void gen_kv(uint16_t* kv, int64_t n, uint64_t seed, unsigned int* amax_bits) {
  __shared__ float partial[kThreads];
  float m = 0.0f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint16_t b = mla_gen::kv_bits(seed, static_cast<uint64_t>(i));
    kv[i] = b;
    const float a = mla_gen::abs_value(b);
    m = a > m ? a : m;
  }
  partial[threadIdx.x] = m;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half && partial[threadIdx.x + half] > partial[threadIdx.x])
      partial[threadIdx.x] = partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicMax(amax_bits, __float_as_uint(partial[0]));
}

// In place: the amax bits left by gen_kv become the fp32 scale.
__global__ void amax_to_scale(float* scale) {
  scale[0] = mla_gen::fp8_scale_from_amax(__uint_as_float(*reinterpret_cast<unsigned int*>(scale)));
}

__global__ void gen_fp8(const uint16_t* kv, uint8_t* fp8, int64_t n, const float* scale_ptr) {
  const float scale = *scale_ptr;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    fp8[i] = mla_gen::fp8_code(kv[i], scale);
}

// One thread per (row, block of 32).
__global__ void gen_mxfp4(const uint16_t* kv, uint8_t* packed, uint8_t* scales, int64_t rows) {
  const int64_t n = rows * mla_gen::kBlocksPerRow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / mla_gen::kBlocksPerRow;
    const int blk = static_cast<int>(i % mla_gen::kBlocksPerRow);
    mla_gen::mxfp4_block(kv + r * mla_gen::kQkDim + blk * mla_gen::kBlock,
                         packed + r * mla_gen::kPackedPerRow + blk * (mla_gen::kBlock / 2),
                         scales + r * mla_gen::kScaleStride + blk);
  }
}

__global__ void gen_indptr(int32_t* qo, int32_t* kvp, int64_t bs, int64_t kv_len) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i <= bs) {
    qo[i] = mla_gen::indptr_value(i, 1);
    kvp[i] = mla_gen::indptr_value(i, kv_len);
  }
}

template <class T>
T* dst(const harness::TensorPtrs& p, const char* name) {
  return static_cast<T*>(p.at(name));
}

void generate_on_device(const harness::ShapeCase& s, uint64_t seed, const harness::TensorPtrs& out) {
  const int64_t bs = s.get("bs"), kv_len = s.get("kv"), total_kv = bs * kv_len;
  const int64_t q_n = bs * mla_gen::kHeads * mla_gen::kQkDim, kv_n = total_kv * mla_gen::kQkDim;
  uint16_t* q = dst<uint16_t>(out, "q");
  uint16_t* kv = dst<uint16_t>(out, "kv_bf16");
  uint8_t* fp8 = dst<uint8_t>(out, "kv_fp8");
  float* fp8_scale = dst<float>(out, "kv_fp8_scale");
  uint8_t* packed = dst<uint8_t>(out, "kv_mxfp4");
  uint8_t* scales = dst<uint8_t>(out, "kv_mxfp4_scale");

  HARNESS_GPU_CHECK(hipMemset(fp8_scale, 0, sizeof(float)));
  HARNESS_GPU_CHECK(hipMemset(scales, 0, static_cast<size_t>(mla_gen::pad_scale_rows(total_kv)) * mla_gen::kScaleStride));

  gen_q<<<grid_for(q_n), kThreads>>>(q, q_n, seed);
  HARNESS_GPU_CHECK_LAUNCH("mla_decode gen_q");
  gen_kv<<<grid_for(kv_n), kThreads>>>(kv, kv_n, seed, reinterpret_cast<unsigned int*>(fp8_scale));
  HARNESS_GPU_CHECK_LAUNCH("mla_decode gen_kv");
  amax_to_scale<<<1, 1>>>(fp8_scale);
  HARNESS_GPU_CHECK_LAUNCH("mla_decode amax_to_scale");
  gen_fp8<<<grid_for(kv_n), kThreads>>>(kv, fp8, kv_n, fp8_scale);
  HARNESS_GPU_CHECK_LAUNCH("mla_decode gen_fp8");
  gen_mxfp4<<<grid_for(total_kv * mla_gen::kBlocksPerRow), kThreads>>>(kv, packed, scales, total_kv);
  HARNESS_GPU_CHECK_LAUNCH("mla_decode gen_mxfp4");
  gen_indptr<<<grid_for(bs + 1), kThreads>>>(dst<int32_t>(out, "qo_indptr"), dst<int32_t>(out, "kv_indptr"), bs,
                                            kv_len);
  HARNESS_GPU_CHECK_LAUNCH("mla_decode gen_indptr");
}

}  // namespace

HARNESS_REGISTER_DEVICE_GENERATOR("mla_decode", generate_on_device);
