// The mla_decode problem (spec: mla_decode.md): shapes, tolerance, inputs, host generation, cost.
#include "problems/mla_decode/task.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "problems/mla_decode/generate.h"
#include "problems/mla_decode/oracle.hpp"

namespace mla {

MlaDecodeConfig make_config(int64_t batch_size, int64_t kv_seq_len) {
  MlaDecodeConfig c{};
  c.batch_size = static_cast<int>(batch_size);
  c.num_heads = kHeads;
  c.num_kv_heads = 1;
  c.qk_head_dim = kQkDim;
  c.kv_lora_rank = kVDim;
  c.qk_rope_head_dim = kRopeDim;
  c.v_head_dim = kVDim;
  c.q_seq_len = 1;
  c.kv_seq_len = static_cast<int>(kv_seq_len);
  c.sm_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kQkDim)));
  return c;
}

MlaDecodeConfig config_for(const harness::ShapeCase& s) { return make_config(s.get("bs"), s.get("kv")); }

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t threads = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), n);
  if (threads == 1) { fn(0, n); return; }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int64_t i = 0; i < threads; ++i)
    pool.emplace_back([&fn, i, n, threads] { fn(n * i / threads, n * (i + 1) / threads); });
  for (auto& t : pool) t.join();
}

namespace {

// Largest |x| over bf16 values, as float: max is order-independent, so any split gives the same bits.
void atomic_max_abs(std::atomic<uint32_t>& acc, float v) {
  const uint32_t bits = numerics::f32_bits(v);  // v >= 0: the bit patterns order like the values
  uint32_t cur = acc.load();
  while (bits > cur && !acc.compare_exchange_weak(cur, bits)) {
  }
}

}  // namespace

void quantize_kv(const uint16_t* kv, int64_t total_kv, uint8_t* fp8, float* fp8_scale, uint8_t* packed,
                 uint8_t* scales) {
  std::atomic<uint32_t> amax_bits{0};
  parallel_for(total_kv, [&](int64_t b, int64_t e) {
    float amax = 0;
    for (int64_t i = b * kQkDim; i < e * kQkDim; ++i) amax = std::max(amax, mla_gen::abs_value(kv[i]));
    atomic_max_abs(amax_bits, amax);
  });
  const float scale = mla_gen::fp8_scale_from_amax(numerics::bits_f32(amax_bits.load()));
  *fp8_scale = scale;
  parallel_for(total_kv, [&](int64_t b, int64_t e) {
    for (int64_t i = b * kQkDim; i < e * kQkDim; ++i) fp8[i] = mla_gen::fp8_code(kv[i], scale);
    for (int64_t r = b; r < e; ++r)
      for (int blk = 0; blk < mla_gen::kBlocksPerRow; ++blk)
        mla_gen::mxfp4_block(kv + r * kQkDim + blk * mla_gen::kBlock,
                             packed + r * mla_gen::kPackedPerRow + blk * (mla_gen::kBlock / 2),
                             scales + r * kScaleStride + blk);
  });
}

namespace {

using harness::DType;
using harness::ShapeCase;
using harness::TensorSpec;

bool reads_any(const std::vector<std::string>& reads, const char* name) {
  return std::find(reads.begin(), reads.end(), name) != reads.end();
}

template <class T>
T* ptr_or_null(const harness::TensorPtrs& p, const char* name) {
  auto it = p.find(name);
  return it == p.end() ? nullptr : static_cast<T*>(it->second);
}

ShapeCase shape(int64_t bs, int64_t kv, uint64_t seed) { return ShapeCase{{{"bs", bs}, {"kv", kv}}, seed, {}}; }

class MlaDecodeProblem : public harness::Problem {
 public:
  std::string name() const override { return "mla_decode"; }
  std::string description() const override {
    return "DeepSeek MLA decode, absorbed q (16 heads x 576), one latent KV head (576 = 512 + 64 rope), "
           "KV in bf16 / fp8 / MXFP4";
  }

  std::vector<ShapeCase> test_shapes() const override {
    return {shape(4, 1024, 4220), shape(32, 1024, 5412), shape(64, 8192, 1360), shape(256, 8192, 9826)};
  }
  std::vector<ShapeCase> benchmark_shapes() const override {
    return {shape(4, 1024, 4217),  shape(4, 8192, 4220),  shape(32, 1024, 5412),  shape(32, 8192, 5415),
            shape(64, 1024, 1357), shape(64, 8192, 1360), shape(256, 1024, 9823), shape(256, 8192, 9826)};
  }
  // Shapes from the command line: q_seq_len stays 1 (the spec's decode), kv_indptr is int32, and the
  // three KV copies (bf16, fp8, MXFP4: ~2 KB a token) must fit next to the reference's buffers.
  std::string shape_error(const ShapeCase& s) const override {
    const int64_t bs = s.get("bs"), kv = s.get("kv");
    if (bs < 1 || kv < 1) return "bs and kv must be at least 1";
    if (bs > 65536) return "bs must be at most 65536";
    if (bs * kv > (int64_t{1} << 24)) return "bs * kv must be at most 16777216 tokens (~34 GB of KV in three formats)";
    return "";
  }
  harness::Tolerance tolerance() const override { return {0.1, 0.1, 0.05}; }

  std::vector<TensorSpec> input_specs(const ShapeCase& s) const override {
    const int64_t bs = s.get("bs"), total_q = bs, total_kv = bs * s.get("kv");
    return {
        {"q", DType::bf16, {total_q, kHeads, kQkDim}},
        {"kv_bf16", DType::bf16, {total_kv, 1, kQkDim}},
        {"kv_fp8", DType::fp8_e4m3fn, {total_kv, 1, kQkDim}},
        {"kv_fp8_scale", DType::f32, {1}},
        {"kv_mxfp4", DType::fp4x2, {total_kv, 1, kQkDim / 2}},
        {"kv_mxfp4_scale", DType::e8m0, {mla_gen::pad_scale_rows(total_kv), kScaleStride}},
        {"qo_indptr", DType::i32, {bs + 1}},
        {"kv_indptr", DType::i32, {bs + 1}},
    };
  }
  TensorSpec output_spec(const ShapeCase& s) const override {
    return {"out", DType::bf16, {s.get("bs"), kHeads, kVDim}};
  }

  harness::HostInputs generate(const ShapeCase& s, uint64_t seed) const override {
    harness::HostInputs in;
    for (auto& spec : input_specs(s)) in.tensors.emplace_back(spec);  // zero-filled: scale padding stays 0
    const int64_t bs = s.get("bs"), kv_len = s.get("kv"), total_kv = bs * kv_len;

    uint16_t* q = in.at("q").as<uint16_t>();
    parallel_for(in.at("q").spec.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) q[i] = mla_gen::q_bits(seed, static_cast<uint64_t>(i));
    });

    uint16_t* kv = in.at("kv_bf16").as<uint16_t>();
    parallel_for(total_kv * kQkDim, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) kv[i] = mla_gen::kv_bits(seed, static_cast<uint64_t>(i));
    });
    quantize_kv(kv, total_kv, in.at("kv_fp8").as<uint8_t>(), in.at("kv_fp8_scale").as<float>(),
                in.at("kv_mxfp4").as<uint8_t>(), in.at("kv_mxfp4_scale").as<uint8_t>());

    int32_t* qo = in.at("qo_indptr").as<int32_t>();
    int32_t* kvp = in.at("kv_indptr").as<int32_t>();
    for (int64_t i = 0; i <= bs; ++i) {
      qo[i] = mla_gen::indptr_value(i, 1);
      kvp[i] = mla_gen::indptr_value(i, kv_len);
    }
    return in;
  }

  std::vector<double> oracle(const ShapeCase& s, const harness::HostInputs& in) const override {
    return oracle_bf16(config_for(s), in.at("q").as<uint16_t>(), in.at("kv_bf16").as<uint16_t>(),
                       in.at("qo_indptr").as<int32_t>(), in.at("kv_indptr").as<int32_t>());
  }

  // roofline.md: the KV bytes of every format read, plus q and out; FLOPs of QK^T and PV.
  harness::Cost cost(const ShapeCase& s, const std::vector<std::string>& reads) const override {
    const double bs = static_cast<double>(s.get("bs")), kv_len = static_cast<double>(s.get("kv"));
    const double total_q = bs, total_kv = bs * kv_len;
    double per_token = 0;
    if (reads_any(reads, "kv_bf16")) per_token += kQkDim * 2.0;
    if (reads_any(reads, "kv_fp8")) per_token += kQkDim * 1.0;
    if (reads_any(reads, "kv_mxfp4")) per_token += kQkDim / 2.0 + kQkDim / 32.0;
    harness::Cost c;
    c.bytes = total_kv * per_token + total_q * kHeads * (kQkDim + kVDim) * 2.0;
    c.flops = 2.0 * total_q * kHeads * kv_len * (kQkDim + kVDim);
    return c;
  }

  // Relative L2 error against the float64 oracle over the bf16 inputs. Measured on the spec's four
  // test shapes (hidden test "measure: mla_decode strict limits ...", H200 host, 2026-11-29); the
  // error falls with kv length, so the kv 1024 shapes set the limits (kv 1024 / kv 8192):
  //   bf16 output rounding alone:          0.0017 / 0.0017
  //   fp8 KV, q bf16:                      0.030  / 0.016
  //   fp8 KV, q fp8 (official reference):  0.040  / 0.031   (golden bs3/kv300, official: 0.043)
  //   MXFP4 KV, q bf16:                    0.124  / 0.064
  //   MXFP4 KV, q fp8:                     0.127  / 0.070
  //   MXFP4 KV, q MXFP4 (fp4 matrix path): 0.166  / 0.129
  // Limits: bf16 1e-2 (6x the rounding floor, room for bf16 probabilities in the PV product);
  // fp8 0.08 (2x the q-fp8 case); MXFP4 0.25 (1.5x the q-MXFP4 case). Reading half the KV gives
  // 0.76 (bs 2, kv 1024) and an all-zero output 1, so all three reject skipped work. A variant reading
  // several formats gets the loosest of their limits.
  double strict_rel_l2_limit(const std::vector<std::string>& reads) const override {
    double limit = 1e-2;
    if (reads_any(reads, "kv_fp8")) limit = std::max(limit, 0.08);
    if (reads_any(reads, "kv_mxfp4")) limit = std::max(limit, 0.25);
    return limit;
  }

  std::size_t workspace_bytes(const harness::VariantEntry& v, const ShapeCase& s) const override {
    const MlaDecodeConfig cfg = config_for(s);
    return v.workspace_bytes(&cfg);
  }

  void invoke(const harness::VariantEntry& v, const ShapeCase& s, const harness::TensorPtrs& in, void* out,
              void* workspace, std::size_t workspace_bytes) const override {
    MlaDecodeArgs a{};
    a.cfg = config_for(s);
    a.q = ptr_or_null<const uint16_t>(in, "q");
    a.kv_bf16 = ptr_or_null<const uint16_t>(in, "kv_bf16");
    a.kv_fp8 = ptr_or_null<const uint8_t>(in, "kv_fp8");
    a.kv_fp8_scale = ptr_or_null<const float>(in, "kv_fp8_scale");
    a.kv_mxfp4 = ptr_or_null<const uint8_t>(in, "kv_mxfp4");
    a.kv_mxfp4_scale = ptr_or_null<const uint8_t>(in, "kv_mxfp4_scale");
    a.kv_mxfp4_scale_stride = kScaleStride;
    a.qo_indptr = ptr_or_null<const int32_t>(in, "qo_indptr");
    a.kv_indptr = ptr_or_null<const int32_t>(in, "kv_indptr");
    a.out = static_cast<uint16_t*>(out);
    a.workspace = workspace;
    a.workspace_size = workspace_bytes;
    v.launch(&a);
  }
};

HARNESS_REGISTER_PROBLEM(MlaDecodeProblem);

}  // namespace
}  // namespace mla
