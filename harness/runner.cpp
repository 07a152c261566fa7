#include "harness/runner.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/atomic_file.hpp"
#include "harness/build_info.hpp"
#include "harness/matrix_rate.hpp"
#include "harness/seeds.hpp"
#include "harness/verdict.hpp"

namespace harness {

std::vector<ShapeCase> set_shapes(const Problem& p, ShapeSet s) {
  switch (s) {
    case ShapeSet::test: return p.test_shapes();
    case ShapeSet::benchmark: return p.benchmark_shapes();
    case ShapeSet::custom: return {};
  }
  return {};
}

ShapeSet run_shape_set(const RunOptions& o) {
  return o.custom_shapes.empty() ? o.shape_set.value_or(default_shape_set(o.mode)) : ShapeSet::custom;
}

std::vector<ShapeCase> run_shapes(const Problem& p, const RunOptions& o) {
  return run_shape_set(o) == ShapeSet::custom ? o.custom_shapes : set_shapes(p, run_shape_set(o));
}

const VariantEntry* find_reference_variant(const std::string& problem) {
  for (const auto& v : variant_registry())
    if (v.problem == problem && (v.flags & kVariantReference) && v.backend == Backend::gpu) return &v;
  return nullptr;
}

namespace {
std::string input_file(const std::string& dir, const TensorSpec& t) {
  return (std::filesystem::path(dir) / (t.name + ".bin")).string();
}
}  // namespace

std::string check_input_files(const Problem& p, const ShapeCase& s, const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) return "--inputs " + dir + ": not a directory";
  for (const auto& t : p.input_specs(s)) {
    const std::string f = input_file(dir, t);
    std::error_code ec;
    const auto size = std::filesystem::file_size(f, ec);
    if (ec) return fmt::format("--inputs: {} is missing ({} of {} needs {} bytes)", f, t.name, s.label(), t.bytes());
    if (size != t.bytes())
      return fmt::format("--inputs: {} has {} bytes; {} of {} needs {}", f, size, t.name, s.label(), t.bytes());
  }
  return "";
}

namespace {

// A check that failed: the shape is recorded as failed with this message.
struct CheckFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string format_location(const std::vector<int64_t>& idx) {
  return fmt::format("[{}]", fmt::join(idx, ","));
}

// Buffers and calls of one shape on one device.
class ShapeSession {
 public:
  ShapeSession(Device& dev, const Problem& p, const VariantEntry& v, const ShapeCase& s, const VariantEntry* ref)
      : dev_(dev), p_(p), v_(v), s_(s), ref_(ref), out_spec_(p.output_spec(s)) {
    for (auto& spec : p.input_specs(s)) {
      inputs_.emplace_back(dev, spec.bytes());
      ptrs_[spec.name] = inputs_.back().get();
      specs_.push_back(std::move(spec));
    }
    out_bytes_ = out_spec_.bytes();
    out_ = DeviceBuffer(dev, out_bytes_ + kGuardBytes);
    ws_bytes_ = p.workspace_bytes(v, s);
    ws_ = DeviceBuffer(dev, ws_bytes_ + kGuardBytes);
    out_guard_ = arm_guard(out_, out_bytes_);
    ws_guard_ = arm_guard(ws_, ws_bytes_);
  }

  void generate(uint64_t seed) {
    dev_.generate_inputs(p_, s_, seed, ptrs_);
    hash_inputs();
  }

  // The inputs from <dir>/<tensor>.bin (raw bytes in the official layout; sizes checked by the caller).
  void load(const std::string& dir) {
    for (size_t i = 0; i < specs_.size(); ++i) {
      const std::string bytes = read_file(input_file(dir, specs_[i]));
      if (bytes.size() != specs_[i].bytes()) throw std::runtime_error("wrong size: " + input_file(dir, specs_[i]));
      dev_.upload(inputs_[i].get(), bytes.data(), bytes.size());
    }
    hash_inputs();
  }

  // One digest of every input tensor: equal digests, identical inputs (e.g. a run on loaded files and
  // one on generated inputs).
  std::string inputs_digest() const {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t x : input_hashes_) h = (h ^ x) * 1099511628211ull;
    return fmt::format("{:016x}", h);
  }

  void poison() { dev_.fill(out_.get(), kPoisonByte, out_bytes_); }

  void call() {
    p_.invoke(v_, s_, ptrs_, out_.get(), ws_.get(), ws_bytes_);
    dev_.check_last_error(v_.name.c_str());
    dev_.synchronize();
  }

  double timed_call(const TimingOptions& t) {
    const double s = dev_.time_call([&] { p_.invoke(v_, s_, ptrs_, out_.get(), ws_.get(), ws_bytes_); }, t);
    dev_.check_last_error(v_.name.c_str());
    return s;
  }

  // Inputs unchanged since generate(), nothing written past the output or the workspace.
  void check_integrity() {
    dev_.synchronize();
    for (size_t i = 0; i < specs_.size(); ++i)
      if (dev_.hash(inputs_[i].get(), specs_[i].bytes()) != input_hashes_[i])
        throw CheckFailure("input mutated: " + specs_[i].name);
    if (dev_.hash(static_cast<char*>(out_.get()) + out_bytes_, kGuardBytes) != out_guard_)
      throw CheckFailure("wrote past the output");
    if (dev_.hash(static_cast<char*>(ws_.get()) + ws_bytes_, kGuardBytes) != ws_guard_)
      throw CheckFailure("wrote past the workspace");
  }

  // The check reference for the current inputs: the GPU reference variant's output, or the oracle.
  std::vector<double> reference() {
    if (ref_) return run_reference_variant();
    HostInputs host;
    for (size_t i = 0; i < specs_.size(); ++i) {
      host.tensors.emplace_back(specs_[i]);
      dev_.download(host.tensors.back().data.data(), inputs_[i].get(), specs_[i].bytes());
    }
    return p_.oracle(s_, host);
  }

  std::vector<float> output() {
    std::vector<uint8_t> raw(out_bytes_);
    dev_.download(raw.data(), out_.get(), out_bytes_);
    return decode_to_float(raw.data(), out_spec_.dtype, static_cast<size_t>(out_spec_.numel()));
  }

  const TensorSpec& output_spec() const { return out_spec_; }

  // One more call under the device's escaped-work check (output hashed when the end event fires and
  // again after a full synchronize).
  SettleHashes settle_check() {
    return dev_.hash_at_end_event([&] { p_.invoke(v_, s_, ptrs_, out_.get(), ws_.get(), ws_bytes_); }, out_.get(),
                                  out_bytes_, kPoisonByte);
  }

 private:
  void hash_inputs() {
    dev_.synchronize();
    input_hashes_.clear();
    for (size_t i = 0; i < specs_.size(); ++i) input_hashes_.push_back(dev_.hash(inputs_[i].get(), specs_[i].bytes()));
  }

  uint64_t arm_guard(DeviceBuffer& b, std::size_t offset) {
    char* g = static_cast<char*>(b.get()) + offset;
    dev_.fill(g, kGuardByte, kGuardBytes);
    dev_.synchronize();
    return dev_.hash(g, kGuardBytes);
  }

  std::vector<double> run_reference_variant() {
    const std::size_t ws_bytes = p_.workspace_bytes(*ref_, s_);
    DeviceBuffer out(dev_, out_bytes_), ws(dev_, ws_bytes);
    dev_.fill(out.get(), kPoisonByte, out_bytes_);
    p_.invoke(*ref_, s_, ptrs_, out.get(), ws.get(), ws_bytes);
    dev_.check_last_error(ref_->name.c_str());
    dev_.synchronize();
    std::vector<uint8_t> raw(out_bytes_);
    dev_.download(raw.data(), out.get(), out_bytes_);
    const auto f = decode_to_float(raw.data(), out_spec_.dtype, static_cast<size_t>(out_spec_.numel()));
    return std::vector<double>(f.begin(), f.end());
  }

  Device& dev_;
  const Problem& p_;
  const VariantEntry& v_;
  const ShapeCase& s_;
  const VariantEntry* ref_;
  TensorSpec out_spec_;
  std::vector<TensorSpec> specs_;
  std::vector<DeviceBuffer> inputs_;
  TensorPtrs ptrs_;
  DeviceBuffer out_, ws_;
  std::size_t out_bytes_ = 0, ws_bytes_ = 0;
  uint64_t out_guard_ = 0, ws_guard_ = 0;
  std::vector<uint64_t> input_hashes_;
};

// Compares one output, keeps the worst verdicts seen for the shape, throws CheckFailure on a fail;
// returns the output it checked.
std::vector<float> check_output(ShapeResult& r, ShapeSession& session, const std::vector<double>& ref,
                                const Problem& p, double strict_limit) {
  auto out = session.output();
  if (out.size() != ref.size())
    throw std::logic_error(fmt::format("reference has {} elements, output {}", ref.size(), out.size()));
  const auto off = official_verdict(out.data(), ref.data(), out.size(), session.output_spec().shape, p.tolerance());
  const auto st = strict_verdict(out.data(), ref.data(), out.size(), strict_limit);
  ++r.checks;
  if (!r.official || off.mismatches > r.official->mismatches) r.official = off;
  if (!r.strict || !(st.rel_l2 <= r.strict->rel_l2)) r.strict = st;
  if (!off.passed) {
    std::string where;
    if (!off.first_locations.empty()) where = ", first at " + format_location(off.first_locations.front());
    throw CheckFailure(fmt::format("official check failed: {} of {} elements mismatch ({:.3f}%, allowed {:.3f}%){}",
                                   off.mismatches, off.total, 100 * off.fraction, 100 * off.allowance, where));
  }
  if (!st.passed)
    throw CheckFailure(fmt::format("strict check failed: rel L2 {:.4g} > limit {:.4g} (max abs {:.4g})", st.rel_l2,
                                   st.limit, st.max_abs));
  return out;
}

// The last call's output against the warm-up's, bit for bit (benchmark mode calls on the same inputs).
void compare_repeat(ShapeResult& r, const std::vector<float>& first, const std::vector<float>& last) {
  r.repeat_differing = 0;
  r.repeat_max_abs = 0;
  for (std::size_t i = 0; i < first.size() && i < last.size(); ++i) {
    if (std::bit_cast<uint32_t>(first[i]) == std::bit_cast<uint32_t>(last[i])) continue;
    ++r.repeat_differing;
    r.repeat_max_abs = std::max(r.repeat_max_abs, std::fabs(double(first[i]) - double(last[i])));
  }
  r.repeat_check = r.repeat_differing > 0 ? "differs" : "identical";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct ShapeContext {
  Device& dev;
  const Problem& p;
  const VariantEntry& v;
  const VariantEntry* ref;
  const RunOptions& o;
  TimingOptions timing;
  StopRule rule;
  const ProgressFn& progress;
  std::string tag;  // "problem/variant [i/n] label"
};

// Statistics (ns) and bandwidth of the timed calls.
void record_timing(ShapeResult& r, const std::vector<double>& durations_s, const DeviceInfo& info) {
  std::vector<double> ns(durations_s.size());
  std::transform(durations_s.begin(), durations_s.end(), ns.begin(), [](double d) { return d * 1e9; });
  r.stats = compute_stats(ns);
  if (r.stats.mean > 0) {
    r.gbps = r.bytes / r.stats.mean;  // bytes per ns = GB/s
    const double bw = info.bandwidth_bytes_per_s;
    r.pct_bandwidth = bw > 0 ? 100.0 * r.gbps * 1e9 / bw : 0.0;
  }
}

void run_shape(ShapeContext& c, const ShapeCase& s, bool warm_up, ShapeResult& r) {
  const double strict_limit = c.p.strict_rel_l2_limit(c.v.reads);
  const auto say = [&](const std::string& what) { if (c.progress) c.progress(c.tag + ": " + what); };
  ShapeSession session(c.dev, c.p, c.v, s, c.ref);
  const bool leaderboard = c.o.mode == Mode::leaderboard;
  if (!c.o.inputs_dir.empty()) {
    say("loading inputs");
    session.load(c.o.inputs_dir);
    r.inputs_digest = session.inputs_digest();
  } else if (!leaderboard || warm_up) {  // leaderboard timed calls generate their own inputs
    say("generating inputs");
    session.generate(r.seed);
    r.inputs_digest = session.inputs_digest();
  }
  std::vector<double> durations;
  // One untimed, checked call on the session's inputs (the warm-up: JIT and first-call setup; test mode's fresh
  // inputs); returns the reference it was checked against and keeps the output in warm_up_out.
  std::vector<float> warm_up_out;
  const auto checked_call = [&](const std::string& what) {
    session.poison();
    say(what);
    session.call();
    session.check_integrity();
    say("checking " + what);
    std::vector<double> ref = session.reference();
    warm_up_out = check_output(r, session, ref, c.p, strict_limit);
    return ref;
  };
  const auto checked_warm_up = [&] { return checked_call("warm-up"); };

  if (c.o.mode == Mode::profile) {
    // The warm-up outside the capture, then one poisoned call inside the profiler's capture range,
    // checked too. Not timed: a profiler replays and serialises kernels.
    const std::vector<double> ref = checked_warm_up();
    session.poison();
    c.dev.synchronize();
    say("profiled call");
    c.dev.profiler_capture(true);
    try {
      session.call();
    } catch (...) {
      c.dev.profiler_capture(false);
      throw;
    }
    c.dev.profiler_capture(false);
    session.check_integrity();
    check_output(r, session, ref, c.p, strict_limit);
  } else if (c.o.mode == Mode::test) {
    session.poison();
    durations.push_back(session.timed_call(c.timing));
    c.dev.synchronize();
    record_timing(r, durations, c.dev.info());
    session.check_integrity();
    say("checking");
    check_output(r, session, session.reference(), c.p, strict_limit);
    // Fresh inputs: a kernel can pass the shape's own seed and fail a few percent of others (docs/perf.md, section
    // "Session 10, fresh-seed failures"); these calls are checked, not timed.
    for (int i = 0; i < c.o.fresh; ++i) {
      const uint64_t seed = leaderboard_seed(r.seed, uint64_t(i));
      session.generate(seed);
      try {
        checked_call(fmt::format("fresh input {}/{}", i + 1, c.o.fresh));
      } catch (const CheckFailure& e) {
        throw CheckFailure(fmt::format("fresh input {} of {} (--seed {}): {}", i + 1, c.o.fresh, seed, e.what()));
      }
    }
  } else {
    std::vector<double> ref;
    if (warm_up) ref = checked_warm_up();
    const int exposed_before = c.dev.host_exposed_timings();
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0;; ++i) {
      if (leaderboard) {
        r.timed_seeds.push_back(leaderboard_seed(r.seed, i));
        session.generate(r.timed_seeds.back());
      }
      session.poison();
      durations.push_back(session.timed_call(c.timing));
      if (leaderboard) {
        try {
          session.check_integrity();
          check_output(r, session, session.reference(), c.p, strict_limit);
        } catch (...) {
          record_timing(r, durations, c.dev.info());  // keep the timing of a failing shape
          throw;
        }
      }
      const auto stop = should_stop(c.rule, durations, seconds_since(t0));
      if (durations.size() % 10 == 0 || stop != StopReason::none)
        say(fmt::format("run {}, mean {:.2f} us", durations.size(),
                        compute_stats(durations).mean * 1e6));
      if (stop != StopReason::none) {
        r.stop_reason = to_string(stop);
        break;
      }
    }
    c.dev.synchronize();
    record_timing(r, durations, c.dev.info());
    r.host_exposed_timings = c.dev.host_exposed_timings() - exposed_before;
    session.check_integrity();
    if (!leaderboard) {
      say("escaped-work check");
      const SettleHashes h = session.settle_check();
      r.settle_check = !h.supported ? "unsupported" : h.escaped() ? "escaped" : "passed";
      if (h.escaped())
        throw CheckFailure("work escaped the timing events: the output changed after the end event had fired");
      session.check_integrity();
      // Benchmark mode reuses one set of inputs, so the warm-up's reference also checks this output
      // (the official runner does not re-check here).
      if (!ref.empty()) compare_repeat(r, warm_up_out, check_output(r, session, ref, c.p, strict_limit));
    }
  }
}

}  // namespace

RunResult run_variant(Device& dev, const Problem& p, const VariantEntry& v, const RunOptions& o,
                      const ProgressFn& progress) {
  RunResult run;
  run.harness_version = build_info().version;
  run.date = utc_now_iso8601();
  run.device = dev.info();
  // Floors use the dense rate of the operands the variant feeds the matrix units.
  const MatrixRate rate = matrix_rate_for(
      run.device.name, v.flags & kVariantMatrix8bit ? MatrixOperands::eight_bit : MatrixOperands::bf16);
  run.device.matrix_flops_per_s = rate.flops_per_s;
  run.device.matrix_flops_source = rate.source;
  run.problem = p.name();
  run.variant = v.name;
  run.mode = o.mode;
  run.shape_set = run_shape_set(o);
  run.seeds.seed_override = o.seed;
  run.seeds.secret_seed = o.secret_seed.has_value();
  run.seeds.inputs_from = o.inputs_dir;

  ShapeContext c{dev, p, v, nullptr, o, o.timing, StopRule{}, progress, ""};
  // The GPU reference checks GPU variants; cpu variants, --oracle and the reference itself use the oracle.
  if (!o.oracle && v.backend == Backend::gpu && !(v.flags & kVariantReference)) c.ref = find_reference_variant(p.name());
  run.check_reference = c.ref ? "gpu reference variant '" + c.ref->name + "'" : "float64 oracle";
  if (dev.kind() == Backend::cpu && !o.flush_bytes_given)
    // Twice the last-level cache, within [64, 256] MiB: a host flush costs real time on few cores.
    c.timing.flush_bytes = std::clamp<std::size_t>(2 * dev.info().l2_bytes, 64ull << 20, 256ull << 20);
  if (dev.kind() == Backend::cpu) c.timing.hide_host = true;  // no queue to hide: nothing to do
  run.timing = {c.timing.flush,     c.timing.flush ? c.timing.flush_bytes : 0, c.timing.flush && c.timing.clean_flush,
                c.timing.hide_host, c.timing.graph,
                timing_method(c.timing)};
  c.rule = o.stop_rule ? *o.stop_rule
                       : (o.mode == Mode::leaderboard ? leaderboard_stop_rule() : benchmark_stop_rule());

  const auto shapes = run_shapes(p, o);
  // A set other than the mode's own is named in every label, so such shapes never match (in compare,
  // ci or the leaderboard) the mode's own shapes of the same dimensions but other seeds.
  const std::string label_prefix =
      run.drawn_from() == default_shape_set(o.mode) ? "" : to_string(run.drawn_from()) + "/";
  std::vector<int> selected = o.shape_indices;
  if (selected.empty())
    for (int i = 0; i < static_cast<int>(shapes.size()); ++i) selected.push_back(i);

  for (size_t k = 0; k < selected.size(); ++k) {
    const int idx = selected[k];
    if (idx < 0 || idx >= static_cast<int>(shapes.size()))
      throw std::out_of_range(fmt::format("shape index {} out of range (0..{})", idx, shapes.size() - 1));
    const ShapeCase& s = shapes[idx];
    ShapeResult r;
    r.index = idx;
    r.label = label_prefix + s.label();
    r.params = s.params;
    r.seed = shape_seed(s.seed, o.seed, o.secret_seed);
    const Cost cost = p.cost(s, v.reads);
    r.bytes = cost.bytes;
    r.flops = cost.flops;
    r.floor_ns = floor_ns(r.bytes, r.flops, run.device.bandwidth_bytes_per_s, run.device.matrix_flops_per_s);
    c.tag = fmt::format("{}/{} [{}/{}] {}", p.name(), v.name, k + 1, selected.size(), r.label);
    // Leaderboard mode warms up only before the first shape (as the official runner).
    const bool warm_up = o.mode == Mode::benchmark || (o.mode == Mode::leaderboard && k == 0);
    try {
      run_shape(c, s, warm_up, r);
    } catch (const std::exception& e) {
      r.status = "failed";
      r.reason = e.what();
    }
    run.shapes.push_back(std::move(r));
  }
  run.timing.device_method = dev.timing_method(c.timing);
  run.finalize();
  return run;
}

}  // namespace harness
