#include <cmath>
#include <vector>

#include "harness/stats.hpp"
#include "tests/catch.hpp"

using namespace harness;

TEST_CASE("compute_stats: mean, sample std, err, median on known data") {
  const std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
  const Stats s = compute_stats(x);
  CHECK(s.runs == 8);
  CHECK(s.mean == Approx(5.0));
  CHECK(s.std == Approx(std::sqrt(32.0 / 7.0)));  // sum of squares 32, n-1 = 7
  CHECK(s.err == Approx(std::sqrt(32.0 / 7.0) / std::sqrt(8.0)));
  CHECK(s.best == 2);
  CHECK(s.worst == 9);
  CHECK(s.median == Approx(4.5));
  CHECK(compute_stats({3, 1, 2}).median == 2);
  const Stats one = compute_stats({7});
  CHECK(one.std == 0);
  CHECK(one.mean == 7);
  CHECK(compute_stats({}).runs == 0);
}

TEST_CASE("geometric_mean") {
  CHECK(geometric_mean({1, 100}) == Approx(10));
  CHECK(geometric_mean({2, 8, 4}) == Approx(4));
  CHECK(std::isnan(geometric_mean({1, 0})));
  CHECK(std::isnan(geometric_mean({1, NAN})));
}

namespace {

// Feeds a simulated duration sequence to the rule until it stops; returns (runs, reason).
std::pair<size_t, StopReason> simulate(const StopRule& rule, const std::function<double(size_t)>& duration,
                                       double wall_overhead_per_run = 0) {
  std::vector<double> d;
  double wall = 0;
  for (size_t i = 0; i < 1000000; ++i) {
    d.push_back(duration(i));
    wall += d.back() + wall_overhead_per_run;
    const auto r = should_stop(rule, d, wall);
    if (r != StopReason::none) return {d.size(), r};
  }
  return {d.size(), StopReason::none};
}

}  // namespace

TEST_CASE("stopping rule: converges after at least 3 runs when err < 0.1% of mean") {
  const StopRule rule = benchmark_stop_rule();
  // Constant times: err is 0 from the start, but the rule still needs 3 runs.
  auto [n, why] = simulate(rule, [](size_t) { return 1e-4; });
  CHECK(n == 3);
  CHECK(why == StopReason::converged);
  // Alternating +-1%: std ~1% of mean, err < 0.1% needs n > ~100.
  auto [n2, why2] = simulate(rule, [](size_t i) { return i % 2 ? 1.01e-4 : 0.99e-4; });
  CHECK(why2 == StopReason::converged);
  CHECK(n2 > 90);
  CHECK(n2 < 120);
  std::vector<double> d(n2 - 1);
  for (size_t i = 0; i < d.size(); ++i) d[i] = i % 2 ? 1.01e-4 : 0.99e-4;
  CHECK(should_stop(rule, d, 0) == StopReason::none);  // not one run earlier
}

TEST_CASE("stopping rule: run caps") {
  // +-50% noise never converges within the caps.
  auto noisy = [](size_t i) { return i % 2 ? 1.5e-6 : 0.5e-6; };
  auto [n, why] = simulate(benchmark_stop_rule(), noisy);
  CHECK(n == 1000);
  CHECK(why == StopReason::max_runs);
  auto [n2, why2] = simulate(leaderboard_stop_rule(), noisy);
  CHECK(n2 == 100);
  CHECK(why2 == StopReason::max_runs);
}

TEST_CASE("stopping rule: time caps") {
  auto noisy_slow = [](size_t i) { return i % 2 ? 1.5 : 0.5; };  // mean 1 s per run
  auto [n, why] = simulate(benchmark_stop_rule(), noisy_slow);
  CHECK(why == StopReason::time_budget);
  CHECK(n == 51);  // runs * mean first exceeds 50 s
  auto [n2, why2] = simulate(leaderboard_stop_rule(), noisy_slow);
  CHECK(why2 == StopReason::time_budget);
  CHECK(n2 == 31);
  // Wall time (e.g. checks between timed calls) caps at 120 s even with a small timed total.
  auto [n3, why3] = simulate(leaderboard_stop_rule(), [](size_t i) { return i % 2 ? 0.015 : 0.005; }, 10.0);
  CHECK(why3 == StopReason::wall_time);
  CHECK(n3 == 12);
  // Below 3 runs nothing but the run cap stops.
  CHECK(should_stop(benchmark_stop_rule(), {100.0, 100.0}, 1000) == StopReason::none);
  StopRule two = benchmark_stop_rule();
  two.max_runs = 2;
  CHECK(should_stop(two, {1.0, 2.0}, 0) == StopReason::max_runs);
}
