// The cpu variant: float32 attention over the bf16 q and KV, multi-threaded over (q row, head).
#include <algorithm>
#include <cmath>
#include <vector>

#include "problems/mla_decode/mla_api.h"
#include "problems/mla_decode/task.hpp"
#include "reference/numerics.hpp"

namespace {

size_t workspace_bytes(const MlaDecodeConfig&) { return 0; }

void launch(const MlaDecodeArgs& a) {
  const int heads = a.cfg.num_heads, dqk = a.cfg.qk_head_dim, dv = a.cfg.v_head_dim;
  const int64_t bs = a.cfg.batch_size;
  const int64_t total_q = a.qo_indptr[bs];
  std::vector<int64_t> batch_of(static_cast<size_t>(total_q));
  for (int64_t b = 0; b < bs; ++b)
    for (int64_t r = a.qo_indptr[b]; r < a.qo_indptr[b + 1]; ++r) batch_of[static_cast<size_t>(r)] = b;

  mla::parallel_for(total_q * heads, [&](int64_t begin, int64_t end) {
    std::vector<float> qf(static_cast<size_t>(dqk)), s, acc(static_cast<size_t>(dv));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / heads, h = item % heads;
      const int64_t b = batch_of[static_cast<size_t>(r)];
      const int64_t t0 = a.kv_indptr[b], n = a.kv_indptr[b + 1] - t0;
      const uint16_t* qrow = a.q + (r * heads + h) * dqk;
      for (int d = 0; d < dqk; ++d) qf[static_cast<size_t>(d)] = numerics::bf16_to_f32(qrow[d]);

      s.resize(static_cast<size_t>(n));
      float mx = -INFINITY;
      for (int64_t t = 0; t < n; ++t) {
        const uint16_t* k = a.kv_bf16 + (t0 + t) * dqk;
        float dot = 0;
        for (int d = 0; d < dqk; ++d) dot += qf[static_cast<size_t>(d)] * numerics::bf16_to_f32(k[d]);
        s[static_cast<size_t>(t)] = dot * a.cfg.sm_scale;
        mx = std::max(mx, s[static_cast<size_t>(t)]);
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      float denom = 0;
      for (int64_t t = 0; t < n; ++t) {
        const float p = std::exp(s[static_cast<size_t>(t)] - mx);
        denom += p;
        const uint16_t* v = a.kv_bf16 + (t0 + t) * dqk;
        for (int d = 0; d < dv; ++d) acc[static_cast<size_t>(d)] += p * numerics::bf16_to_f32(v[d]);
      }
      uint16_t* o = a.out + (r * heads + h) * dv;
      const float inv = n > 0 ? 1.0f / denom : 0.0f;
      for (int d = 0; d < dv; ++d) o[d] = numerics::f32_to_bf16(acc[static_cast<size_t>(d)] * inv);
    }
  });
}

}  // namespace

MLA_DECODE_VARIANT("cpu", cpu, "float32 attention over bf16 q and KV, host threads",
                   "q,kv_bf16,kv_indptr,qo_indptr", ::harness::kVariantNone);
