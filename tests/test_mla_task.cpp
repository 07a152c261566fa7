// mla_decode problem definition: shapes, specs, generation, cost, strict limits, cpu variant.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "harness/problem.hpp"
#include "problems/mla_decode/oracle.hpp"
#include "problems/mla_decode/task.hpp"
#include "reference/mxfp4.hpp"
#include "reference/numerics.hpp"
#include "tests/catch.hpp"

namespace {

using harness::DType;
using harness::ShapeCase;

const harness::Problem& mla_problem() {
  const harness::Problem* p = harness::find_problem("mla_decode");
  REQUIRE(p != nullptr);
  return *p;
}

ShapeCase small(int64_t bs = 2, int64_t kv = 300) { return ShapeCase{{{"bs", bs}, {"kv", kv}}, 7, {}}; }

const std::vector<std::string> kReadsBf16{"q", "kv_bf16", "kv_indptr", "qo_indptr"};
const std::vector<std::string> kReadsFp8{"q", "kv_fp8", "kv_fp8_scale", "kv_indptr", "qo_indptr"};
const std::vector<std::string> kReadsMx{"q", "kv_mxfp4", "kv_mxfp4_scale", "kv_indptr", "qo_indptr"};

double rel_l2(const std::vector<double>& x, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (x[i] - ref[i]) * (x[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

std::vector<double> oracle_of(const ShapeCase& s, const harness::HostInputs& in, const std::string& format) {
  const auto cfg = mla::config_for(s);
  const auto* q = in.at("q").as<uint16_t>();
  const auto* qo = in.at("qo_indptr").as<int32_t>();
  const auto* kvp = in.at("kv_indptr").as<int32_t>();
  if (format == "fp8")
    return mla::oracle_fp8(cfg, q, in.at("kv_fp8").as<uint8_t>(), *in.at("kv_fp8_scale").as<float>(), qo, kvp);
  if (format == "mxfp4")
    return mla::oracle_mxfp4(cfg, q, in.at("kv_mxfp4").as<uint8_t>(), in.at("kv_mxfp4_scale").as<uint8_t>(),
                             mla::kScaleStride, qo, kvp);
  return mla::oracle_bf16(cfg, q, in.at("kv_bf16").as<uint16_t>(), qo, kvp);
}

// Byte equality as a plain bool, so that a failure does not print megabytes.
bool same_bytes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) { return a == b; }

void check_mean_std(const harness::HostTensor& t) {
  const auto* v = t.as<uint16_t>();
  const int64_t n = t.spec.numel();
  double sum = 0, sq = 0;
  int64_t non_finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = numerics::bf16_to_f32(v[i]);
    non_finite += !std::isfinite(x);
    sum += x;
    sq += x * x;
  }
  REQUIRE(non_finite == 0);
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  INFO(t.spec.name << " mean " << mean << " std " << sd << " n " << n);
  CHECK(std::abs(mean) < 0.02);
  CHECK(std::abs(sd - 1.0) < 0.02);
}

}  // namespace

TEST_CASE("mla task: shapes, seeds and tolerance follow the spec") {
  const auto& p = mla_problem();
  CHECK(p.name() == "mla_decode");
  const auto tests = p.test_shapes();
  REQUIRE(tests.size() == 4);
  CHECK(tests[0].params == std::vector<std::pair<std::string, int64_t>>{{"bs", 4}, {"kv", 1024}});
  CHECK(tests[0].seed == 4220);
  CHECK(tests[3].get("bs") == 256);
  CHECK(tests[3].get("kv") == 8192);
  CHECK(tests[3].seed == 9826);
  const auto bench = p.benchmark_shapes();
  REQUIRE(bench.size() == 8);
  const int64_t want[8][3] = {{4, 1024, 4217},  {4, 8192, 4220},  {32, 1024, 5412},  {32, 8192, 5415},
                              {64, 1024, 1357}, {64, 8192, 1360}, {256, 1024, 9823}, {256, 8192, 9826}};
  for (int i = 0; i < 8; ++i) {
    CHECK(bench[size_t(i)].get("bs") == want[i][0]);
    CHECK(bench[size_t(i)].get("kv") == want[i][1]);
    CHECK(bench[size_t(i)].seed == uint64_t(want[i][2]));
    CHECK_FALSE(bench[size_t(i)].official_reference_us.has_value());
  }
  const auto tol = p.tolerance();
  CHECK(tol.rtol == 0.1);
  CHECK(tol.atol == 0.1);
  CHECK(tol.max_mismatch_fraction == 0.05);
}

TEST_CASE("mla task: command-line shapes are checked, the spec's always pass") {
  const auto& p = mla_problem();
  for (const auto& s : p.test_shapes()) CHECK(p.shape_error(s).empty());
  for (const auto& s : p.benchmark_shapes()) CHECK(p.shape_error(s).empty());
  const auto with = [](int64_t bs, int64_t kv) { return ShapeCase{{{"bs", bs}, {"kv", kv}}, 1, {}}; };
  CHECK(p.shape_error(with(3, 300)).empty());
  CHECK(p.shape_error(with(0, 1024)) == "bs and kv must be at least 1");
  CHECK(p.shape_error(with(4, 0)) == "bs and kv must be at least 1");
  CHECK(p.shape_error(with(100000, 1)) == "bs must be at most 65536");
  CHECK(p.shape_error(with(4096, 8192)).find("at most 16777216 tokens") != std::string::npos);
}

TEST_CASE("mla task: input and output specs have the official order, dtypes and shapes") {
  const auto& p = mla_problem();
  const auto specs = p.input_specs(small(4, 1024));
  REQUIRE(specs.size() == 8);
  const char* names[] = {"q", "kv_bf16", "kv_fp8", "kv_fp8_scale", "kv_mxfp4", "kv_mxfp4_scale", "qo_indptr",
                         "kv_indptr"};
  const DType types[] = {DType::bf16, DType::bf16, DType::fp8_e4m3fn, DType::f32,
                         DType::fp4x2, DType::e8m0, DType::i32,        DType::i32};
  const std::vector<int64_t> shapes[] = {{4, 16, 576}, {4096, 1, 576}, {4096, 1, 576}, {1},
                                         {4096, 1, 288}, {4096, 24},   {5},            {5}};
  for (size_t i = 0; i < 8; ++i) {
    CHECK(specs[i].name == names[i]);
    CHECK(specs[i].dtype == types[i]);
    CHECK(specs[i].shape == shapes[i]);
  }
  // Scale rows pad to a multiple of 256: 2 * 300 = 600 -> 768.
  CHECK(p.input_specs(small(2, 300))[5].shape == std::vector<int64_t>{768, 24});
  const auto out = p.output_spec(small(4, 1024));
  CHECK(out.dtype == DType::bf16);
  CHECK(out.shape == std::vector<int64_t>{4, 16, 512});
}

TEST_CASE("mla task: generation is deterministic in the seed") {
  const auto& p = mla_problem();
  const auto s = small();
  const auto a = p.generate(s, 11), b = p.generate(s, 11), c = p.generate(s, 12);
  REQUIRE(a.tensors.size() == 8);
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    INFO(a.tensors[i].spec.name);
    CHECK(a.tensors[i].spec.bytes() == a.tensors[i].data.size());
    CHECK(same_bytes(a.tensors[i].data, b.tensors[i].data));
  }
  for (const char* name : {"q", "kv_bf16", "kv_fp8", "kv_mxfp4", "kv_mxfp4_scale"}) {
    INFO(name);
    CHECK_FALSE(same_bytes(a.at(name).data, c.at(name).data));
  }
  // q and kv are different draws, not the same numbers.
  CHECK(!std::equal(a.at("q").data.begin(), a.at("q").data.end(), a.at("kv_bf16").data.begin()));
}

TEST_CASE("mla task: q and kv are standard normal") {
  const auto in = mla_problem().generate(small(2, 300), 4220);
  check_mean_std(in.at("q"));
  check_mean_std(in.at("kv_bf16"));
}

TEST_CASE("mla task: fp8 and MXFP4 tensors are the quantizers applied to kv_bf16") {
  const auto s = small();
  const auto in = mla_problem().generate(s, 5);
  const int64_t rows = 600, n = rows * 576;
  const auto* kv = in.at("kv_bf16").as<uint16_t>();

  float amax = 0;
  std::vector<float> x(size_t(n), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    x[size_t(i)] = numerics::bf16_to_f32(kv[i]);
    amax = std::max(amax, std::abs(x[size_t(i)]));
  }
  // The official bf16 arithmetic (generate.h): scale = bf16(amax / 448), code = e4m3fn(bf16(x / scale)).
  const float scale = numerics::bf16_to_f32(numerics::f32_to_bf16(amax / 448.0f));
  CHECK(amax > 3.0f);
  CHECK(*in.at("kv_fp8_scale").as<float>() == scale);
  const auto* fp8 = in.at("kv_fp8").as<uint8_t>();
  int64_t fp8_bad = 0;
  for (int64_t i = 0; i < n; ++i)
    if (fp8[i] != numerics::f32_to_fp8_e4m3fn(numerics::bf16_to_f32(numerics::f32_to_bf16(x[size_t(i)] / scale))))
      ++fp8_bad;
  CHECK(fp8_bad == 0);

  // MXFP4 through the host row quantizer (reference/mxfp4.cpp), into a zeroed padded layout.
  std::vector<uint8_t> packed(size_t(rows * 288)), scales(size_t(768 * 24), 0);
  numerics::quantize_mxfp4_dynamic_rows(x.data(), rows, 576, packed.data(), scales.data(), 24);
  CHECK(same_bytes(in.at("kv_mxfp4").data, packed));
  CHECK(same_bytes(in.at("kv_mxfp4_scale").data, scales));
  // Padding rows and the 6 unused columns are zero; used scales are not.
  const auto* sc = in.at("kv_mxfp4_scale").as<uint8_t>();
  CHECK(std::all_of(sc + rows * 24, sc + 768 * 24, [](uint8_t b) { return b == 0; }));
  int64_t bad_unused = 0, bad_used = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 18; c < 24; ++c) bad_unused += sc[r * 24 + c] != 0;
    for (int c = 0; c < 18; ++c) bad_used += sc[r * 24 + c] < 100;  // N(0,1) block amax ~2: byte ~126
  }
  CHECK(bad_unused == 0);
  CHECK(bad_used == 0);
}

TEST_CASE("mla task: indptrs are arange times the lengths") {
  const auto in = mla_problem().generate(small(3, 77), 1);
  const auto* qo = in.at("qo_indptr").as<int32_t>();
  const auto* kvp = in.at("kv_indptr").as<int32_t>();
  for (int i = 0; i <= 3; ++i) {
    CHECK(qo[i] == i);
    CHECK(kvp[i] == 77 * i);
  }
}

TEST_CASE("mla task: cost follows roofline.md (bs 4, kv 1024 by hand)") {
  const auto& p = mla_problem();
  const auto s = small(4, 1024);
  // q + out: 4 * 16 * (576 + 512) * 2 = 139264 bytes; total_kv = 4096.
  // FLOPs: 2 * 4 * 16 * 1024 * 1088 = 142606336.
  const auto bf16 = p.cost(s, kReadsBf16);
  CHECK(bf16.bytes == 4096.0 * 1152 + 139264);
  CHECK(bf16.flops == 142606336.0);
  CHECK(p.cost(s, kReadsFp8).bytes == 4096.0 * 576 + 139264);
  CHECK(p.cost(s, kReadsMx).bytes == 4096.0 * 306 + 139264);
  CHECK(p.cost(s, kReadsMx).flops == 142606336.0);
}

TEST_CASE("mla task: strict limits order by format and catch skipped work") {
  const auto& p = mla_problem();
  const double l_bf16 = p.strict_rel_l2_limit(kReadsBf16), l_fp8 = p.strict_rel_l2_limit(kReadsFp8),
               l_mx = p.strict_rel_l2_limit(kReadsMx);
  CHECK(l_bf16 < l_fp8);
  CHECK(l_fp8 < l_mx);
  CHECK(l_mx < 0.5);

  const auto s = small(2, 1024);
  const auto in = p.generate(s, 4220);
  const auto exact = oracle_of(s, in, "bf16");
  const double e_fp8 = rel_l2(oracle_of(s, in, "fp8"), exact);
  const double e_mx = rel_l2(oracle_of(s, in, "mxfp4"), exact);
  INFO("fp8 " << e_fp8 << " mxfp4 " << e_mx);
  CHECK(e_fp8 > 0.01);
  CHECK(e_fp8 < l_fp8);
  CHECK(e_mx > e_fp8);
  CHECK(e_mx < l_mx);

  // A kernel that reads only the first half of every batch's KV must fail even the loosest limit.
  const auto* kvp = in.at("kv_indptr").as<int32_t>();
  std::vector<double> skipped(exact.size());
  for (int b = 0; b < 2; ++b) {
    const int32_t qo[2] = {0, 1}, ip[2] = {0, 512};
    const auto one = mla::oracle_bf16(mla::make_config(1, 512), in.at("q").as<uint16_t>() + b * 16 * 576,
                                      in.at("kv_bf16").as<uint16_t>() + int64_t(kvp[b]) * 576, qo, ip);
    std::copy(one.begin(), one.end(), skipped.begin() + b * 16 * 512);
  }
  const double e_skip = rel_l2(skipped, exact);
  INFO("half KV " << e_skip);
  CHECK(e_skip > l_mx);
}

TEST_CASE("mla task: cpu variant matches the float64 oracle") {
  const auto& p = mla_problem();
  const harness::VariantEntry* v = harness::find_variant("mla_decode", "cpu");
  REQUIRE(v != nullptr);
  CHECK(v->reads == kReadsBf16);
  const auto s = small(2, 300);
  auto in = p.generate(s, 99);
  CHECK(p.workspace_bytes(*v, s) == 0);
  harness::TensorPtrs ptrs;
  for (auto& t : in.tensors) ptrs[t.spec.name] = t.data.data();
  std::vector<uint16_t> out(size_t(p.output_spec(s).numel()), 0x7FC0);
  p.invoke(*v, s, ptrs, out.data(), nullptr, 0);
  const auto exact = p.oracle(s, in);
  std::vector<double> got(out.size());
  size_t non_finite = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    got[i] = numerics::bf16_to_f32(out[i]);
    non_finite += !std::isfinite(got[i]);
  }
  REQUIRE(non_finite == 0);
  const double err = rel_l2(got, exact);
  INFO("cpu rel L2 " << err);
  CHECK(err < 3e-3);
  CHECK(err < p.strict_rel_l2_limit(v->reads));
}

// Measures the strict-limit inputs on the spec's test shapes (hidden: minutes on a many-core host).
// Prints rel L2 against the float64 bf16 oracle for the quantized formats, with q in bf16, in fp8
// (per tensor, the official reference's q path) and in MXFP4 (what an fp4 matrix kernel feeds).
TEST_CASE("measure: mla_decode strict limits on the spec test shapes", "[.][measure]") {
  const auto& p = mla_problem();
  for (const auto& s : p.test_shapes()) {
    const auto in = p.generate(s, s.seed);
    const auto cfg = mla::config_for(s);
    const auto* q = in.at("q").as<uint16_t>();
    const auto* qo = in.at("qo_indptr").as<int32_t>();
    const auto* kvp = in.at("kv_indptr").as<int32_t>();
    const int64_t nq = in.at("q").spec.numel();

    std::vector<float> q_fp8(static_cast<size_t>(nq)), q_mx(static_cast<size_t>(nq));
    float qmax = 0;
    for (int64_t i = 0; i < nq; ++i) qmax = std::max(qmax, std::abs(numerics::bf16_to_f32(q[i])));
    const float qs = numerics::bf16_to_f32(numerics::f32_to_bf16(qmax / 448.0f));
    for (int64_t i = 0; i < nq; ++i) {
      const float x = numerics::bf16_to_f32(numerics::f32_to_bf16(numerics::bf16_to_f32(q[i]) / qs));
      q_fp8[size_t(i)] = numerics::fp8_e4m3fn_to_f32(numerics::f32_to_fp8_e4m3fn(x)) * qs;
    }
    for (int64_t b = 0; b < nq / 32; ++b) {
      float x[32];
      uint8_t packed[16], sb;
      for (int j = 0; j < 32; ++j) x[j] = numerics::bf16_to_f32(q[b * 32 + j]);
      numerics::quantize_block32_dynamic(x, packed, &sb);
      for (int j = 0; j < 32; ++j)
        q_mx[size_t(b * 32 + j)] =
            numerics::e2m1_to_f32(uint8_t(j % 2 ? packed[j / 2] >> 4 : packed[j / 2] & 0xF)) * numerics::e8m0_to_f32(sb);
    }

    const auto exact = p.oracle(s, in);
    std::vector<double> rounded(exact.size());
    for (size_t i = 0; i < exact.size(); ++i) rounded[i] = numerics::bf16_to_f32(numerics::f32_to_bf16(float(exact[i])));
    const auto* fp8 = in.at("kv_fp8").as<uint8_t>();
    const float fs = *in.at("kv_fp8_scale").as<float>();
    const auto* mx = in.at("kv_mxfp4").as<uint8_t>();
    const auto* mxs = in.at("kv_mxfp4_scale").as<uint8_t>();
    const double e_round = rel_l2(rounded, exact);
    const double e_fp8 = rel_l2(mla::oracle_fp8(cfg, q, fp8, fs, qo, kvp), exact);
    const double e_fp8_q8 = rel_l2(mla::oracle_fp8(cfg, q_fp8.data(), fp8, fs, qo, kvp), exact);
    const double e_mx = rel_l2(mla::oracle_mxfp4(cfg, q, mx, mxs, mla::kScaleStride, qo, kvp), exact);
    const double e_mx_q8 = rel_l2(mla::oracle_mxfp4(cfg, q_fp8.data(), mx, mxs, mla::kScaleStride, qo, kvp), exact);
    const double e_mx_q4 = rel_l2(mla::oracle_mxfp4(cfg, q_mx.data(), mx, mxs, mla::kScaleStride, qo, kvp), exact);
    std::printf("mla strict-limit measurement %s: bf16-out rounding %.5f | fp8 KV: q bf16 %.5f, q fp8 %.5f | "
                "mxfp4 KV: q bf16 %.5f, q fp8 %.5f, q mxfp4 %.5f\n",
                s.label().c_str(), e_round, e_fp8, e_fp8_q8, e_mx, e_mx_q8, e_mx_q4);
    CHECK(e_round < p.strict_rel_l2_limit(kReadsBf16));
    CHECK(e_fp8_q8 < p.strict_rel_l2_limit(kReadsFp8));
    CHECK(e_mx_q4 < p.strict_rel_l2_limit(kReadsMx));
  }
}

#if defined(HARNESS_WITH_GPU)
#include <chrono>
#include <mutex>

#include "harness/device.hpp"
#include "harness/gpu/device_generators.hpp"
#include "problems/mla_decode/generate.h"

// The engine's test compares small shapes byte for byte; this one covers the largest test shape
// (2M KV rows: the amax reduction across thousands of blocks, 64-bit indexing) on sampled rows.
TEST_CASE("mla task: GPU generation of the largest test shape is fast and matches the per-element rules") {
  const auto& p = mla_problem();
  REQUIRE(harness::gpu::find_device_generator("mla_decode") != nullptr);
  auto dev = harness::make_gpu_device(0);
  const auto s = p.test_shapes().back();
  REQUIRE(s.get("bs") == 256);
  std::vector<harness::DeviceBuffer> bufs;
  harness::TensorPtrs ptrs;
  for (const auto& spec : p.input_specs(s)) {
    bufs.emplace_back(*dev, spec.bytes());
    dev->fill(bufs.back().get(), 0xa5, spec.bytes());
    ptrs[spec.name] = bufs.back().get();
  }
  dev->generate_inputs(p, s, s.seed, ptrs);  // warm-up (module load)
  dev->synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  dev->generate_inputs(p, s, s.seed, ptrs);
  dev->synchronize();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("GPU generation of bs 256 kv 8192: " << secs << " s");
  CHECK(secs < 2.0);

  const auto specs = p.input_specs(s);
  auto download = [&](const std::string& name) {
    const auto it = std::find_if(specs.begin(), specs.end(), [&](const auto& sp) { return sp.name == name; });
    REQUIRE(it != specs.end());
    harness::HostTensor t(*it);
    dev->download(t.data.data(), ptrs.at(name), t.data.size());
    return t;
  };
  const auto q = download("q"), kv = download("kv_bf16"), fp8 = download("kv_fp8"), mx = download("kv_mxfp4"),
             mxs = download("kv_mxfp4_scale"), scale = download("kv_fp8_scale"), kvp = download("kv_indptr");
  const uint64_t seed = s.seed;
  int64_t q_bad = 0;
  for (int64_t i = 0; i < q.spec.numel(); ++i) q_bad += q.as<uint16_t>()[i] != mla_gen::q_bits(seed, uint64_t(i));
  CHECK(q_bad == 0);

  const int64_t rows = kv.spec.shape[0];
  std::mutex m;
  float amax = 0;
  mla::parallel_for(rows, [&](int64_t b, int64_t e) {
    float local = 0;
    for (int64_t i = b * 576; i < e * 576; ++i) local = std::max(local, mla_gen::abs_value(kv.as<uint16_t>()[i]));
    std::lock_guard<std::mutex> lock(m);
    amax = std::max(amax, local);
  });
  CHECK(amax > 4.0f);
  CHECK(*scale.as<float>() == mla_gen::fp8_scale_from_amax(amax));

  int64_t bad = 0;
  std::vector<int64_t> sample{0, 1, rows / 2, rows - 1};
  for (int64_t k = 0; k < 2000; ++k) sample.push_back((k * 1000003) % rows);
  for (int64_t r : sample) {
    const uint16_t* row = kv.as<uint16_t>() + r * 576;
    for (int d = 0; d < 576; ++d) {
      bad += row[d] != mla_gen::kv_bits(seed, uint64_t(r * 576 + d));
      bad += fp8.as<uint8_t>()[r * 576 + d] != mla_gen::fp8_code(row[d], *scale.as<float>());
    }
    for (int blk = 0; blk < 18; ++blk) {
      uint8_t packed[16], sb;
      mla_gen::mxfp4_block(row + blk * 32, packed, &sb);
      bad += mxs.as<uint8_t>()[r * 24 + blk] != sb;
      for (int j = 0; j < 16; ++j) bad += mx.as<uint8_t>()[r * 288 + blk * 16 + j] != packed[j];
    }
    for (int c = 18; c < 24; ++c) bad += mxs.as<uint8_t>()[r * 24 + c] != 0;
  }
  CHECK(bad == 0);
  CHECK(kvp.as<int32_t>()[256] == 256 * 8192);
}
#endif
