#include "problems/mla_decode/oracle.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "problems/mla_decode/task.hpp"
#include "reference/numerics.hpp"

namespace mla {
namespace {

// Heads handled together by one work item: each dequantized KV row is reused for this many heads,
// while bs 4 still yields 16 items to spread over the threads.
constexpr int kHeadsPerItem = 4;

// load_row(row, double* out576) writes one dequantized KV row (every dequantized value is exact).
template <class LoadRow>
std::vector<double> attention_f64(const MlaDecodeConfig& cfg, const float* q, const int32_t* qo_indptr,
                                  const int32_t* kv_indptr, LoadRow load_row) {
  if (cfg.num_heads != kHeads || cfg.qk_head_dim != kQkDim || cfg.v_head_dim != kVDim)
    throw std::invalid_argument("mla oracle: unexpected head layout");
  const int64_t bs = cfg.batch_size;
  const int64_t total_q = qo_indptr[bs];
  std::vector<int64_t> batch_of(static_cast<size_t>(total_q));
  for (int64_t b = 0; b < bs; ++b)
    for (int64_t r = qo_indptr[b]; r < qo_indptr[b + 1]; ++r) batch_of[static_cast<size_t>(r)] = b;

  std::vector<double> out(static_cast<size_t>(total_q) * kHeads * kVDim);
  const double sm_scale = 1.0 / std::sqrt(static_cast<double>(kQkDim));
  constexpr int groups = kHeads / kHeadsPerItem;

  parallel_for(total_q * groups, [&](int64_t begin, int64_t end) {
    std::vector<double> row(kQkDim), qd(static_cast<size_t>(kHeadsPerItem) * kQkDim), scores;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / groups;
      const int h0 = static_cast<int>(item % groups) * kHeadsPerItem;
      const int64_t b = batch_of[static_cast<size_t>(r)];
      const int64_t t0 = kv_indptr[b], n = kv_indptr[b + 1] - t0;
      for (int hh = 0; hh < kHeadsPerItem; ++hh)
        for (int d = 0; d < kQkDim; ++d)
          qd[static_cast<size_t>(hh * kQkDim + d)] = q[(r * kHeads + h0 + hh) * kQkDim + d];

      scores.assign(static_cast<size_t>(n) * kHeadsPerItem, 0.0);
      std::vector<double> mx(kHeadsPerItem, -INFINITY);
      for (int64_t t = 0; t < n; ++t) {
        load_row(t0 + t, row.data());
        for (int hh = 0; hh < kHeadsPerItem; ++hh) {
          double s = 0;
          for (int d = 0; d < kQkDim; ++d) s += qd[static_cast<size_t>(hh * kQkDim + d)] * row[static_cast<size_t>(d)];
          s *= sm_scale;
          scores[static_cast<size_t>(t * kHeadsPerItem + hh)] = s;
          mx[static_cast<size_t>(hh)] = std::max(mx[static_cast<size_t>(hh)], s);
        }
      }
      std::vector<double> acc(static_cast<size_t>(kHeadsPerItem) * kVDim, 0.0), denom(kHeadsPerItem, 0.0);
      for (int64_t t = 0; t < n; ++t) {
        load_row(t0 + t, row.data());
        for (int hh = 0; hh < kHeadsPerItem; ++hh) {
          const double p = std::exp(scores[static_cast<size_t>(t * kHeadsPerItem + hh)] - mx[static_cast<size_t>(hh)]);
          denom[static_cast<size_t>(hh)] += p;
          double* a = &acc[static_cast<size_t>(hh * kVDim)];
          for (int d = 0; d < kVDim; ++d) a[d] += p * row[static_cast<size_t>(d)];
        }
      }
      for (int hh = 0; hh < kHeadsPerItem; ++hh) {
        double* o = &out[static_cast<size_t>((r * kHeads + h0 + hh) * kVDim)];
        for (int d = 0; d < kVDim; ++d)
          o[d] = n > 0 ? acc[static_cast<size_t>(hh * kVDim + d)] / denom[static_cast<size_t>(hh)] : 0.0;
      }
    }
  });
  return out;
}

std::vector<float> q_values(const MlaDecodeConfig& cfg, const uint16_t* q, const int32_t* qo_indptr) {
  std::vector<float> f(static_cast<size_t>(qo_indptr[cfg.batch_size]) * kHeads * kQkDim);
  for (size_t i = 0; i < f.size(); ++i) f[i] = numerics::bf16_to_f32(q[i]);
  return f;
}

}  // namespace

std::vector<double> oracle_bf16(const MlaDecodeConfig& cfg, const float* q, const uint16_t* kv_bf16,
                                const int32_t* qo_indptr, const int32_t* kv_indptr) {
  return attention_f64(cfg, q, qo_indptr, kv_indptr, [kv_bf16](int64_t t, double* row) {
    const uint16_t* src = kv_bf16 + t * kQkDim;
    for (int d = 0; d < kQkDim; ++d) row[d] = numerics::bf16_to_f32(src[d]);
  });
}

std::vector<double> oracle_fp8(const MlaDecodeConfig& cfg, const float* q, const uint8_t* kv_fp8, float kv_fp8_scale,
                               const int32_t* qo_indptr, const int32_t* kv_indptr) {
  float lut[256];
  for (int c = 0; c < 256; ++c) lut[c] = numerics::fp8_e4m3fn_to_f32(static_cast<uint8_t>(c));
  const double scale = kv_fp8_scale;
  return attention_f64(cfg, q, qo_indptr, kv_indptr, [kv_fp8, &lut, scale](int64_t t, double* row) {
    const uint8_t* src = kv_fp8 + t * kQkDim;
    for (int d = 0; d < kQkDim; ++d) row[d] = static_cast<double>(lut[src[d]]) * scale;
  });
}

std::vector<double> oracle_mxfp4(const MlaDecodeConfig& cfg, const float* q, const uint8_t* kv_mxfp4,
                                 const uint8_t* kv_mxfp4_scale, int64_t scale_stride, const int32_t* qo_indptr,
                                 const int32_t* kv_indptr) {
  return attention_f64(cfg, q, qo_indptr, kv_indptr, [=](int64_t t, double* row) {
    const uint8_t* packed = kv_mxfp4 + t * (kQkDim / 2);
    const uint8_t* scales = kv_mxfp4_scale + t * scale_stride;
    for (int d = 0; d < kQkDim; ++d) {
      const uint8_t byte = packed[d / 2];
      const uint8_t code = (d % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
      row[d] = static_cast<double>(numerics::e2m1_to_f32(code)) * numerics::e8m0_to_f32(scales[d / 32]);
    }
  });
}

std::vector<double> oracle_bf16(const MlaDecodeConfig& cfg, const uint16_t* q, const uint16_t* kv_bf16,
                                const int32_t* qo_indptr, const int32_t* kv_indptr) {
  return oracle_bf16(cfg, q_values(cfg, q, qo_indptr).data(), kv_bf16, qo_indptr, kv_indptr);
}

std::vector<double> oracle_fp8(const MlaDecodeConfig& cfg, const uint16_t* q, const uint8_t* kv_fp8, float kv_fp8_scale,
                               const int32_t* qo_indptr, const int32_t* kv_indptr) {
  return oracle_fp8(cfg, q_values(cfg, q, qo_indptr).data(), kv_fp8, kv_fp8_scale, qo_indptr, kv_indptr);
}

std::vector<double> oracle_mxfp4(const MlaDecodeConfig& cfg, const uint16_t* q, const uint8_t* kv_mxfp4,
                                 const uint8_t* kv_mxfp4_scale, int64_t scale_stride, const int32_t* qo_indptr,
                                 const int32_t* kv_indptr) {
  return oracle_mxfp4(cfg, q_values(cfg, q, qo_indptr).data(), kv_mxfp4, kv_mxfp4_scale, scale_stride, qo_indptr,
                      kv_indptr);
}

}  // namespace mla
