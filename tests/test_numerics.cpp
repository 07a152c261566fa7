// Scalar formats against the golden tables produced by the official code (tests/data/golden/numerics.json)
// and against brute-force nearest-value oracles in double.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "reference/numerics.hpp"
#include "tests/catch.hpp"
#include "tests/golden_io.hpp"

using namespace numerics;

namespace {

const nlohmann::json& golden_tables() {
  static const nlohmann::json j = golden::load_golden_numerics();
  return j;
}

// JSON holds fp32 bit patterns as signed 32-bit integers.
uint32_t json_bits(const nlohmann::json& v) { return static_cast<uint32_t>(v.get<int64_t>()); }

float json_value(const nlohmann::json& v) {
  return v.is_null() ? std::numeric_limits<float>::quiet_NaN() : v.get<float>();
}

// "input -> output" as text, so a failing CHECK shows which input went wrong.
std::string show(double in, int64_t out) { return std::to_string(in) + " -> " + std::to_string(out); }
std::string show_bits(uint64_t in, int64_t out) { return "bits " + std::to_string(in) + " -> " + std::to_string(out); }

// Pushes every check through one CHECK for the first mismatch and counts the rest.
struct Mismatches {
  int count = 0;
  void expect(const std::string& got, const std::string& want) {
    if (got != want && count++ == 0) CHECK(got == want);
  }
};

// The 256 fp8 values according to the golden decode table (NaN for the two NaN codes).
std::vector<double> golden_fp8_values() {
  std::vector<double> v;
  for (const auto& x : golden_tables().at("fp8_e4m3fn_decode"))
    v.push_back(x.is_null() ? std::nan("") : x.get<double>());
  return v;
}

// Nearest representable value among `values` (indexed by code), ties to the even code; NaN codes skipped.
int nearest_code(double x, const std::vector<double>& values) {
  int best = -1;
  for (int c = 0; c < static_cast<int>(values.size()); ++c) {
    if (std::isnan(values[c])) continue;
    if (best < 0) { best = c; continue; }
    const double d = std::fabs(x - values[c]), db = std::fabs(x - values[best]);
    // Same value (+-0): prefer the code with the input's sign.
    if (values[c] == values[best]) {
      if (std::signbit(values[c]) == std::signbit(x) && std::signbit(values[best]) != std::signbit(x)) best = c;
      continue;
    }
    if (d < db || (d == db && (c & 1) == 0 && (best & 1) == 1)) best = c;
  }
  return best;
}

}  // namespace

TEST_CASE("fp8 e4m3fn: every code decodes to the golden value") {
  const auto& table = golden_tables().at("fp8_e4m3fn_decode");
  REQUIRE(table.size() == 256);
  Mismatches bad;
  for (int c = 0; c < 256; ++c) {
    const float got = fp8_e4m3fn_to_f32(static_cast<uint8_t>(c));
    if (table[c].is_null()) {
      CHECK(std::isnan(got));
      CHECK((c & 0x7F) == 0x7F);
    } else {
      const float want = table[c].get<float>();
      bad.expect(show(c, static_cast<int64_t>(f32_bits(got))), show(c, static_cast<int64_t>(f32_bits(want))));
    }
  }
  CHECK(bad.count == 0);
}

TEST_CASE("fp8 e4m3fn: every finite value round-trips") {
  int checked = 0;
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    const uint8_t back = f32_to_fp8_e4m3fn(fp8_e4m3fn_to_f32(static_cast<uint8_t>(c)));
    if (back != c) CHECK(show(c, back) == show(c, c));
    ++checked;
  }
  CHECK(checked == 254);
}

TEST_CASE("fp8 e4m3fn: encode matches the golden RNE table") {
  const auto& table = golden_tables().at("fp8_e4m3fn_encode_rne_in_range");
  REQUIRE(table.size() > 500);
  Mismatches bad;
  for (const auto& row : table) {
    const uint32_t bits = json_bits(row[0]);
    bad.expect(show_bits(bits, f32_to_fp8_e4m3fn(bits_f32(bits))), show_bits(bits, row[1].get<int64_t>()));
  }
  CHECK(bad.count == 0);
}

TEST_CASE("fp8 e4m3fn: encode is the nearest value (ties even) for random inputs; saturation and NaN") {
  const std::vector<double> values = golden_fp8_values();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> log_mag(-14.0, 9.0);
  Mismatches bad;
  for (int n = 0; n < 200000; ++n) {
    float x = static_cast<float>(std::exp2(log_mag(rng)));
    if (rng() & 1) x = -x;
    if (std::fabs(x) > 448.0f) x = std::copysign(448.0f, x);
    bad.expect(show(x, f32_to_fp8_e4m3fn(x)), show(x, nearest_code(x, values)));
  }
  CHECK(bad.count == 0);
  CHECK(f32_to_fp8_e4m3fn(1000.0f) == 0x7E);
  CHECK(f32_to_fp8_e4m3fn(-1000.0f) == 0xFE);
  CHECK(f32_to_fp8_e4m3fn(464.0f) == 0x7E);  // would be NaN without saturation
  CHECK(f32_to_fp8_e4m3fn(std::numeric_limits<float>::infinity()) == 0x7E);
  CHECK(f32_to_fp8_e4m3fn(std::numeric_limits<float>::quiet_NaN()) == 0x7F);
}

TEST_CASE("bf16: f32 -> bf16 matches the golden RNE table; truncation would not") {
  const auto& table = golden_tables().at("bf16_from_f32_rne");
  REQUIRE(table.size() > 1000);
  Mismatches bad;
  int truncation_disagrees = 0;
  for (const auto& row : table) {
    const uint32_t bits = json_bits(row[0]);
    const int64_t want = row[1].get<int64_t>();
    bad.expect(show_bits(bits, f32_to_bf16(bits_f32(bits))), show_bits(bits, want));
    // A double holds every float exactly, so the direct double path must agree too.
    bad.expect(show_bits(bits, f64_to_bf16(static_cast<double>(bits_f32(bits)))), show_bits(bits, want));
    if ((bits >> 16) != static_cast<uint32_t>(want)) ++truncation_disagrees;
  }
  CHECK(bad.count == 0);
  // The table discriminates: a truncating conversion would fail on many rows.
  CHECK(truncation_disagrees > static_cast<int>(table.size()) / 10);
}

TEST_CASE("bf16: NaN stays NaN, infinities and overflow") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(nan))));
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(bits_f32(0x7F800001u)))));  // signalling NaN must not become inf
  CHECK(std::isnan(bf16_to_f32(f64_to_bf16(std::nan("")))));
  CHECK(f64_to_bf16(std::numeric_limits<double>::infinity()) == 0x7F80);
  CHECK(f64_to_bf16(-std::numeric_limits<double>::infinity()) == 0xFF80);
  CHECK(f64_to_bf16(1e300) == 0x7F80);
  CHECK(f64_to_bf16(-1e-300) == 0x8000);
  CHECK(f32_to_bf16(bits_f32(0x7F7FFFFFu)) == 0x7F80);  // max float rounds to inf in bf16
}

TEST_CASE("bf16: f64 -> bf16 rounds once, not through float") {
  // 1 + 2^-8 + 2^-30: above the bf16 midpoint, so it rounds up; through float it would first
  // become the exact midpoint 1 + 2^-8 and then tie down to 1.
  const double d = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  CHECK(f64_to_bf16(d) == 0x3F81);
  CHECK(f32_to_bf16(static_cast<float>(d)) == 0x3F80);
  CHECK(f64_to_bf16(-d) == 0xBF81);
}

TEST_CASE("bf16: f64 -> bf16 is the nearest bf16, ties to even (midpoint oracle)") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> log_mag(-136.0, 127.0);
  Mismatches bad;
  for (int n = 0; n < 300000; ++n) {
    double d = std::exp2(log_mag(rng));
    if (n % 7 == 0) {  // exact midpoints: a bf16 value plus half its quantum
      const uint16_t b = f64_to_bf16(d);
      d = (static_cast<double>(bf16_to_f32(b)) + static_cast<double>(bf16_to_f32(static_cast<uint16_t>(b + 1)))) / 2;
    }
    if (rng() & 1) d = -d;
    const uint16_t got = f64_to_bf16(d);
    // Neighbours of the result in magnitude; midpoints are exact in double (9 significant bits).
    const uint16_t mag = got & 0x7FFF;
    const double a = std::fabs(d);
    const double v = bf16_to_f32(mag);
    const double up = (mag < 0x7F80) ? bf16_to_f32(static_cast<uint16_t>(mag + 1)) : v;
    const double down = mag > 0 ? bf16_to_f32(static_cast<uint16_t>(mag - 1)) : 0.0;
    const double mid_up = (v + up) / 2, mid_down = (v + down) / 2;
    const bool even = (mag & 1) == 0;
    bool ok = (a < mid_up || (a == mid_up && even)) && (a > mid_down || (a == mid_down && even) || mag == 0);
    ok = ok && ((got & 0x8000) != 0) == std::signbit(d);
    bad.expect(show(d, ok ? 1 : 0), show(d, 1));
  }
  CHECK(bad.count == 0);
}

TEST_CASE("e2m1: both tie rules match their golden tables") {
  for (const char* name : {"e2m1_code_rne", "e2m1_code_ties_away"}) {
    const bool rne = std::string(name) == "e2m1_code_rne";
    const auto& table = golden_tables().at(name);
    REQUIRE(table.size() > 20);
    Mismatches bad;
    for (const auto& row : table) {
      const float x = json_value(row[0]);
      const int got = rne ? f32_to_e2m1_rne(x) : f32_to_e2m1_ties_away(x);
      bad.expect(std::string(name) + " " + show(x, got), std::string(name) + " " + show(x, row[1].get<int64_t>()));
    }
    CHECK(bad.count == 0);
  }
}

TEST_CASE("e2m1: the two tie rules disagree exactly on the ties 0.25, 1.25, 2.5, 5") {
  // Taken from the golden tables, so a wrong rounding rule in either function fails here.
  const auto& rne = golden_tables().at("e2m1_code_rne");
  const auto& away = golden_tables().at("e2m1_code_ties_away");
  REQUIRE(rne.size() == away.size());
  std::vector<float> disagree;
  for (size_t i = 0; i < rne.size(); ++i) {
    REQUIRE((rne[i][0].is_null() == away[i][0].is_null()));
    if (rne[i][0].is_null()) continue;
    if (rne[i][1] != away[i][1]) disagree.push_back(std::fabs(rne[i][0].get<float>()));
  }
  for (float t : {0.25f, 1.25f, 2.5f, 5.0f}) {
    bool found = false;
    for (float d : disagree) found = found || d == t;
    CHECK(found);
    CHECK(f32_to_e2m1_rne(t) != f32_to_e2m1_ties_away(t));
    CHECK(f32_to_e2m1_rne(-t) != f32_to_e2m1_ties_away(-t));
  }
  for (float t : {0.75f, 1.75f, 3.5f}) CHECK(f32_to_e2m1_rne(t) == f32_to_e2m1_ties_away(t));
}

TEST_CASE("e2m1: decode and nearest-value oracle for random inputs") {
  const float expected[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  std::vector<double> values(16);
  for (int c = 0; c < 16; ++c) {
    CHECK(e2m1_to_f32(static_cast<uint8_t>(c)) == ((c & 8) ? -expected[c & 7] : expected[c & 7]));
    values[c] = e2m1_to_f32(static_cast<uint8_t>(c));
  }
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> uni(-7.0f, 7.0f);
  Mismatches bad;
  for (int n = 0; n < 100000; ++n) {
    const float x = (n % 4 == 0) ? std::round(uni(rng) * 4.0f) / 4.0f : uni(rng);  // many exact ties
    const float clamped = std::fmax(-6.0f, std::fmin(6.0f, x));
    const int want_rne = nearest_code(clamped, values);
    // Ties away: among equally near values, the larger magnitude.
    int want_away = want_rne;
    for (int c = 0; c < 16; ++c) {
      if (std::signbit(values[c]) != std::signbit(clamped)) continue;
      if (std::fabs(clamped - values[c]) == std::fabs(clamped - values[want_away]) &&
          std::fabs(values[c]) > std::fabs(values[want_away]))
        want_away = c;
    }
    bad.expect("rne " + show(x, f32_to_e2m1_rne(x)), "rne " + show(x, want_rne));
    bad.expect("away " + show(x, f32_to_e2m1_ties_away(x)), "away " + show(x, want_away));
  }
  CHECK(bad.count == 0);
}

TEST_CASE("e8m0: weight rule matches the golden per1x32 table") {
  const auto& table = golden_tables().at("e8m0_per1x32_from_f32");
  REQUIRE(table.size() > 1000);
  Mismatches bad;
  int via_amax = 0;
  for (const auto& row : table) {
    const uint32_t bits = json_bits(row[0]);  // amax / 4
    const int64_t want = row[1].get<int64_t>();
    bad.expect(show_bits(bits, e8m0_from_f32_weight_rule(bits_f32(bits))), show_bits(bits, want));
    const float amax = bits_f32(bits) * 4.0f;  // exact while normal and finite
    if (std::isfinite(amax) && amax >= 4 * std::numeric_limits<float>::min()) {
      bad.expect("amax " + show_bits(bits, e8m0_per1x32(amax)), "amax " + show_bits(bits, want));
      ++via_amax;
    }
  }
  CHECK(bad.count == 0);
  CHECK(via_amax > 1000);
}

TEST_CASE("e8m0: decode, and the weight rule on subnormals and zero") {
  CHECK(e8m0_to_f32(127) == 1.0f);
  CHECK(e8m0_to_f32(0) == std::ldexp(1.0f, -127));
  CHECK(e8m0_to_f32(254) == std::ldexp(1.0f, 127));
  CHECK(std::isnan(e8m0_to_f32(255)));
  CHECK(e8m0_from_f32_weight_rule(0.0f) == 0);
  CHECK(e8m0_from_f32_weight_rule(bits_f32(0x00400000u)) == 0);  // exactly 2^-127: bit 22 alone
  CHECK(e8m0_from_f32_weight_rule(bits_f32(0x00400001u)) == 1);  // bit 22 and a lower bit
  CHECK(e8m0_from_f32_weight_rule(bits_f32(0x003FFFFFu)) == 0);
  CHECK(e8m0_from_f32_weight_rule(1.5f) == 128);
  CHECK(e8m0_from_f32_weight_rule(1.4999999f) == 127);
}

TEST_CASE("MXFP4 dynamic scale exponent: floor(log2(amax)) - 2, rounding mantissas >= 1.75 up") {
  // Independent formulation with frexp: amax = f * 2^p, f in [0.5, 1).
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> log_mag(-120.0, 120.0);
  Mismatches bad;
  for (int n = 0; n < 100000; ++n) {
    const float amax = static_cast<float>(std::exp2(log_mag(rng)));
    int p = 0;
    const double f = std::frexp(static_cast<double>(amax), &p);
    const int want = (p - 1) - 2 + (f >= 0.875 ? 1 : 0);
    bad.expect(show(amax, mxfp4_dynamic_scale_exp(amax)), show(amax, want));
  }
  CHECK(bad.count == 0);
  CHECK(mxfp4_dynamic_scale_exp(0.0f) == -127);
  CHECK(mxfp4_dynamic_scale_exp(1.0f) == -2);
  CHECK(mxfp4_dynamic_scale_exp(1.75f) == -1);
  CHECK(mxfp4_dynamic_scale_exp(1.7499999f) == -2);
  // FLT_MAX rounds into the inf/NaN exponent field 255: 255 - 129 = 126 (the clamp does not bind).
  CHECK(mxfp4_dynamic_scale_exp(std::numeric_limits<float>::max()) == 126);
  CHECK(mxfp4_dynamic_scale_exp(std::ldexp(1.0f, 120)) == 118);
}

TEST_CASE("e2m1: the kernels' branchless ties-away rounding gives the reference's code for every float") {
  // All 2^32 bit patterns (NaNs, infinities, subnormals, every tie): ~2 s.
  uint64_t differ = 0;
  uint32_t first = 0;
  for (uint64_t i = 0; i <= 0xFFFFFFFFull; ++i) {
    const float f = bits_f32(static_cast<uint32_t>(i));
    if (f32_to_e2m1_ties_away_branchless(f) != f32_to_e2m1_ties_away(f) && differ++ == 0) first = static_cast<uint32_t>(i);
  }
  INFO("first differing bit pattern 0x" << std::hex << first);
  CHECK(differ == 0);
}

TEST_CASE("e2m1: the finite form (no NaN test) gives the reference's code for every finite float") {
  // All 2^32 bit patterns but NaNs (infinities, subnormals, every tie); a NaN is where the forms may differ.
  uint64_t differ = 0, nans = 0;
  uint32_t first = 0;
  for (uint64_t i = 0; i <= 0xFFFFFFFFull; ++i) {
    const float f = bits_f32(static_cast<uint32_t>(i));
    if (std::isnan(f)) {
      nans += f32_to_e2m1_ties_away_finite(f) != f32_to_e2m1_ties_away(f);
      continue;
    }
    if (f32_to_e2m1_ties_away_finite(f) != f32_to_e2m1_ties_away(f) && differ++ == 0) first = static_cast<uint32_t>(i);
  }
  INFO("first differing bit pattern 0x" << std::hex << first);
  CHECK(differ == 0);
  CHECK(nans > 0);  // negative NaNs keep their sign bit here: the reference gives 7, this form 15
}

TEST_CASE("e2m1: the value form (no code) gives the value of the reference's code where it applies") {
  // Every float whose significand fits in 16 bits (low 8 mantissa bits zero: a bf16 value times a power of two, which
  // moe's quantizer feeds it) or with |x| >= 1, infinities included; -0 where a negative value rounds to 0.
  uint64_t differ = 0, tried = 0;
  uint32_t first = 0;
  for (uint64_t i = 0; i <= 0xFFFFFFFFull; ++i) {
    const uint32_t b = static_cast<uint32_t>(i);
    const float f = bits_f32(b);
    if (std::isnan(f) || ((b & 0x7FFFFFFFu) < 0x3F800000u && (b & 0xFFu) != 0)) continue;
    ++tried;
    if (f32_bits(e2m1_value_ties_away(f)) != f32_bits(e2m1_to_f32(f32_to_e2m1_ties_away(f))) && differ++ == 0) first = b;
  }
  INFO("first differing bit pattern 0x" << std::hex << first);
  CHECK(tried > (uint64_t{1} << 31));
  CHECK(differ == 0);
  // Outside that domain |x| + 1 rounds before the e2m1 rounding: just below the tie 0.75 the form gives 1, not 0.5.
  const float below = std::nextafter(0.75f, 0.0f);
  CHECK(e2m1_to_f32(f32_to_e2m1_ties_away(below)) == 0.5f);
  CHECK(e2m1_value_ties_away(below) == 1.0f);
}

TEST_CASE("MXFP4 dynamic rule: a block has a nonzero e2m1 code exactly when amax 2^-s reaches 1/4") {
  // moe's quantizer (token_scales) tests a block's amax instead of its codes; every non-negative bf16 amax.
  int bad = 0;
  for (uint32_t h = 0; h < 0x7F80u; ++h) {
    const float amax = bits_f32(h << 16);
    const int s = mxfp4_dynamic_scale_exp(amax);
    const float x = amax * exp2_f32(-s);
    bad += (x >= 0.25f) != ((f32_to_e2m1_ties_away(x) & 7u) != 0u);
  }
  CHECK(bad == 0);
  CHECK(mxfp4_dynamic_scale_exp(0.0f) == -127);  // an all-zero block: 0 * 2^127 < 1/4, no nonzero code
}
