// mla_decode against the golden vectors produced by the official code (tests/data/golden/README.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness/problem.hpp"
#include "problems/mla_decode/oracle.hpp"
#include "problems/mla_decode/task.hpp"
#include "reference/numerics.hpp"
#include "tests/catch.hpp"

namespace {

struct GoldenCase {
  const char* dir;
  int bs, kv;
};
const GoldenCase kCases[] = {{"mla_bs2_kv64", 2, 64}, {"mla_bs3_kv300", 3, 300}};

template <class T>
std::vector<T> load(const std::string& dir, const std::string& file) {
  const std::string path = std::string(HARNESS_TEST_DATA_DIR) + "/golden/" + dir + "/" + file;
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() % sizeof(T) == 0);
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

struct Golden {
  std::vector<uint16_t> q, kv;
  std::vector<int32_t> qo, kvp;
  std::vector<float> exact;
  explicit Golden(const GoldenCase& c)
      : q(load<uint16_t>(c.dir, "q.bin")),
        kv(load<uint16_t>(c.dir, "kv_bf16.bin")),
        qo(load<int32_t>(c.dir, "qo_indptr.bin")),
        kvp(load<int32_t>(c.dir, "kv_indptr.bin")),
        exact(load<float>(c.dir, "out_exact_bf16_inputs.bin")) {
    REQUIRE(q.size() == size_t(c.bs) * 16 * 576);
    REQUIRE(kv.size() == size_t(c.bs) * c.kv * 576);
    REQUIRE(exact.size() == size_t(c.bs) * 16 * 512);
  }
};

double rel_l2(const std::vector<double>& x, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (x[i] - ref[i]) * (x[i] - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

std::vector<double> bf16_to_double(const std::vector<uint16_t>& v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = numerics::bf16_to_f32(v[i]);
  return d;
}

// Number of differing bytes (sizes must match); keeps failure output short.
size_t count_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  REQUIRE(a.size() == b.size());
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

const harness::Problem& mla_problem() {
  const harness::Problem* p = harness::find_problem("mla_decode");
  REQUIRE(p != nullptr);
  return *p;
}

}  // namespace

TEST_CASE("mla golden: float64 oracle matches out_exact_bf16_inputs") {
  for (const auto& c : kCases) {
    INFO(c.dir);
    Golden g(c);
    const auto out = mla::oracle_bf16(mla::make_config(c.bs, c.kv), g.q.data(), g.kv.data(), g.qo.data(), g.kvp.data());
    REQUIRE(out.size() == g.exact.size());
    double max_err = 0, max_ref = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (!std::isfinite(out[i])) max_err = INFINITY;
      max_err = std::max(max_err, std::abs(out[i] - g.exact[i]));
      max_ref = std::max(max_ref, double(std::abs(g.exact[i])));
    }
    CHECK(max_ref > 0.05);  // a real signal, not zeros
    CHECK(max_err < 1e-5);
  }
}

TEST_CASE("mla golden: cpu variant matches the exact output within bf16 rounding") {
  const harness::VariantEntry* v = harness::find_variant("mla_decode", "cpu");
  REQUIRE(v != nullptr);
  for (const auto& c : kCases) {
    INFO(c.dir);
    Golden g(c);
    const harness::ShapeCase s{{{"bs", c.bs}, {"kv", c.kv}}, 0, {}};
    std::vector<uint16_t> out(g.exact.size(), 0x7FC0);  // NaN: every element must be written
    harness::TensorPtrs ptrs{{"q", g.q.data()}, {"kv_bf16", g.kv.data()}, {"qo_indptr", g.qo.data()},
                             {"kv_indptr", g.kvp.data()}};
    mla_problem().invoke(*v, s, ptrs, out.data(), nullptr, 0);
    const auto d = bf16_to_double(out);
    size_t bad = 0;
    for (size_t i = 0; i < d.size(); ++i)
      if (!(std::abs(d[i] - g.exact[i]) <= 4e-3 * std::abs(g.exact[i]) + 1e-5)) ++bad;
    CHECK(bad == 0);
    CHECK(rel_l2(d, g.exact) < 3e-3);
  }
}

// README: the official fp8 reference (fp8 q x fp8 KV) differs from the exact output by ~4.3% rel L2
// on bs3/kv300. The fp8 strict limit must accept it; the bf16 limit must reject it.
TEST_CASE("mla golden: official fp8 reference is within the fp8 strict limit only") {
  const auto& p = mla_problem();
  const double fp8_limit = p.strict_rel_l2_limit({"q", "kv_fp8", "kv_fp8_scale", "kv_indptr", "qo_indptr"});
  const double bf16_limit = p.strict_rel_l2_limit({"q", "kv_bf16", "kv_indptr", "qo_indptr"});
  for (const auto& c : kCases) {
    INFO(c.dir);
    Golden g(c);
    const auto official = bf16_to_double(load<uint16_t>(c.dir, "out_reference_a8w8.bin"));
    const double err = rel_l2(official, g.exact);
    INFO("official a8w8 rel L2 " << err);
    CHECK(err > 0.02);
    CHECK(err < 0.06);
    CHECK(err < fp8_limit);
    CHECK(err > bf16_limit);

    // Our float64 oracle over the same fp8 KV (q kept in bf16) sits below the official a8w8 error.
    const auto fp8 = load<uint8_t>(c.dir, "kv_fp8.bin");
    const float scale = load<float>(c.dir, "kv_fp8_scale.bin").at(0);
    const auto ours = mla::oracle_fp8(mla::make_config(c.bs, c.kv), g.q.data(), fp8.data(), scale, g.qo.data(),
                                      g.kvp.data());
    const double err8 = rel_l2(ours, g.exact);
    INFO("fp8-KV float64 rel L2 " << err8);
    CHECK(err8 > 0.01);
    CHECK(err8 < err);
  }
}

TEST_CASE("mla golden: our quantizers reproduce the official fp8 and MXFP4 KV bit for bit") {
  for (const auto& c : kCases) {
    INFO(c.dir);
    Golden g(c);
    const int64_t total_kv = int64_t(c.bs) * c.kv;
    const auto want_fp8 = load<uint8_t>(c.dir, "kv_fp8.bin");
    const auto want_scale = load<float>(c.dir, "kv_fp8_scale.bin");
    const auto want_mx = load<uint8_t>(c.dir, "kv_mxfp4.bin");
    const auto want_mx_scale = load<uint8_t>(c.dir, "kv_mxfp4_scale.bin");
    REQUIRE(want_mx_scale.size() == size_t((total_kv + 255) / 256 * 256 * 24));

    std::vector<uint8_t> fp8(want_fp8.size(), 0xEE), mx(want_mx.size(), 0xEE), mx_scale(want_mx_scale.size(), 0);
    float scale = -1;
    mla::quantize_kv(g.kv.data(), total_kv, fp8.data(), &scale, mx.data(), mx_scale.data());
    CHECK(scale == want_scale.at(0));
    CHECK(count_diff(fp8, want_fp8) == 0);
    CHECK(count_diff(mx, want_mx) == 0);
    CHECK(count_diff(mx_scale, want_mx_scale) == 0);
  }
}
