// The moe_mxfp4 problem: shapes, seeds, tolerance, inputs, host generation, cost model.
#include "problems/moe_mxfp4/task.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "problems/moe_mxfp4/generate.h"
#include "problems/moe_mxfp4/host_threads.hpp"
#include "problems/moe_mxfp4/oracle.hpp"
#include "reference/mxfp4.hpp"

namespace moe_task {

using harness::DType;
using harness::ShapeCase;
using harness::TensorSpec;

ShapeCase make_shape(int64_t d_hidden, int64_t d_expert, int64_t n_routed, int64_t k, int64_t bs, uint64_t seed) {
  ShapeCase s;
  s.params = {{"d_hidden", d_hidden}, {"d_expert", d_expert}, {"n_routed", n_routed}, {"k", k}, {"bs", bs}};
  s.seed = seed;
  return s;
}

MoeConfig config_of(const ShapeCase& s) {
  MoeConfig c{};
  c.d_hidden = static_cast<int>(s.get("d_hidden"));
  c.d_expert = static_cast<int>(s.get("d_expert"));
  c.d_hidden_pad = static_cast<int>(pad_to(c.d_hidden, 256));
  c.d_expert_pad = static_cast<int>(pad_to(c.d_expert, 256));
  c.n_routed_experts = static_cast<int>(s.get("n_routed"));
  c.n_shared_experts = 1;
  c.n_experts_per_token = static_cast<int>(s.get("k"));
  c.total_top_k = c.n_experts_per_token + c.n_shared_experts;
  c.bs = static_cast<int>(s.get("bs"));
  // Blocks of 32 along K and the 16x16 weight shuffle need these (every official shape has them).
  if (c.d_hidden % 256 || c.d_expert % 256 || c.n_experts_per_token > c.n_routed_experts || c.bs < 1)
    throw std::invalid_argument("moe_mxfp4: unsupported shape " + s.label());
  return c;
}

std::vector<TensorSpec> input_specs(const MoeConfig& c) {
  const int64_t E = num_experts(c), M = c.bs, H = c.d_hidden, I = c.d_expert, T = c.total_top_k;
  const int64_t gu_rows = E * 2 * I, dn_rows = E * H;
  return {
      {"hidden_states", DType::bf16, {M, H}},
      {"gate_up_weight", DType::fp4x2, {E, 2 * I, H / 2}},
      {"down_weight", DType::fp4x2, {E, H, I / 2}},
      {"gate_up_weight_scale", DType::e8m0, {gu_rows, H / 32}},
      {"down_weight_scale", DType::e8m0, {dn_rows, I / 32}},
      {"gate_up_weight_shuffled", DType::fp4x2, {E, 2 * I, H / 2}},
      {"down_weight_shuffled", DType::fp4x2, {E, H, I / 2}},
      {"gate_up_weight_scale_shuffled", DType::e8m0, {pad_to(gu_rows, 256), pad_to(H / 32, 8)}},
      {"down_weight_scale_shuffled", DType::e8m0, {pad_to(dn_rows, 256), pad_to(I / 32, 8)}},
      {"topk_weights", DType::f32, {M, T}},
      {"topk_ids", DType::i32, {M, T}},
  };
}

TensorSpec output_spec(const MoeConfig& c) { return {"out", DType::bf16, {c.bs, c.d_hidden}}; }

MoeArgs make_args(const MoeConfig& c, const harness::TensorPtrs& in, void* out, void* workspace,
                  std::size_t workspace_bytes) {
  auto get = [&](const char* name) -> void* {
    auto it = in.find(name);
    if (it == in.end()) throw std::out_of_range(std::string("moe_mxfp4: missing input ") + name);
    return it->second;
  };
  MoeArgs a{};
  a.cfg = c;
  a.hidden_states = static_cast<const uint16_t*>(get("hidden_states"));
  a.gate_up_weight = static_cast<const uint8_t*>(get("gate_up_weight"));
  a.down_weight = static_cast<const uint8_t*>(get("down_weight"));
  a.gate_up_weight_scale = static_cast<const uint8_t*>(get("gate_up_weight_scale"));
  a.down_weight_scale = static_cast<const uint8_t*>(get("down_weight_scale"));
  a.gate_up_weight_shuffled = static_cast<const uint8_t*>(get("gate_up_weight_shuffled"));
  a.down_weight_shuffled = static_cast<const uint8_t*>(get("down_weight_shuffled"));
  a.gate_up_weight_scale_shuffled = static_cast<const uint8_t*>(get("gate_up_weight_scale_shuffled"));
  a.down_weight_scale_shuffled = static_cast<const uint8_t*>(get("down_weight_scale_shuffled"));
  a.topk_weights = static_cast<const float*>(get("topk_weights"));
  a.topk_ids = static_cast<const int32_t*>(get("topk_ids"));
  a.out = static_cast<uint16_t*>(out);
  a.workspace = workspace;
  a.workspace_size = workspace_bytes;
  return a;
}

harness::TensorPtrs pointers_of(harness::HostInputs& in) {
  harness::TensorPtrs p;
  for (auto& t : in.tensors) p[t.spec.name] = t.data.data();
  return p;
}

namespace {

// Raw packed weights and scales of one [E, N, K] weight tensor, one 32-block at a time.
void generate_weight(uint64_t seed, uint32_t tensor_id, int64_t elements, int k, uint8_t* packed, uint8_t* scales) {
  const float inv_sqrt_k = moe_gen::inv_sqrt_f32(k);
  moe_host::parallel_for(elements / 32, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) moe_gen::weight_block(seed, tensor_id, b, inv_sqrt_k, packed + b * 16, scales + b);
  });
}

void generate_routing(const MoeConfig& c, uint64_t seed, const uint16_t* hidden, float* weights, int32_t* ids) {
  const int H = c.d_hidden, R = c.n_routed_experts;
  const float inv_sqrt_dh = moe_gen::inv_sqrt_f32(H);
  std::vector<uint16_t> router(static_cast<size_t>(R) * H);
  moe_host::parallel_for(static_cast<int64_t>(router.size()), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) router[i] = moe_gen::router_bits(seed, i, inv_sqrt_dh);
  });
  moe_host::parallel_for(c.bs, [&](int64_t t0, int64_t t1) {
    std::vector<double> logits(R);
    for (int64_t t = t0; t < t1; ++t) {
      for (int e = 0; e < R; ++e)
        logits[e] = moe_gen::routing_logit(hidden + t * H, router.data() + static_cast<size_t>(e) * H, H);
      moe_gen::route_token(logits.data(), R, c.n_experts_per_token, weights + t * c.total_top_k,
                           ids + t * c.total_top_k);
    }
  });
}

}  // namespace

harness::HostInputs generate_host(const MoeConfig& c, uint64_t seed) {
  harness::HostInputs in;
  for (auto& spec : input_specs(c)) in.tensors.emplace_back(spec);
  const int64_t E = num_experts(c), H = c.d_hidden, I = c.d_expert;

  auto* hidden = in.at("hidden_states").as<uint16_t>();
  moe_host::parallel_for(int64_t{c.bs} * H, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) hidden[i] = moe_gen::hidden_bits(seed, i);
  });
  generate_routing(c, seed, hidden, in.at("topk_weights").as<float>(), in.at("topk_ids").as<int32_t>());

  struct Weight { const char* name; uint32_t id; int64_t n, k; };
  for (const Weight& w : {Weight{"gate_up_weight", moe_gen::kGateUp, 2 * I, H}, Weight{"down_weight", moe_gen::kDown, H, I}}) {
    const std::string name = w.name;
    auto& packed = in.at(name);
    auto& scales = in.at(name + "_scale");
    generate_weight(seed, w.id, E * w.n * w.k, static_cast<int>(w.k), packed.as<uint8_t>(), scales.as<uint8_t>());
    numerics::shuffle_weight_16x16(packed.as<uint8_t>(), in.at(name + "_shuffled").as<uint8_t>(), E, w.n, w.k / 2);
    numerics::shuffle_scales(scales.as<uint8_t>(), E * w.n, w.k / 32, in.at(name + "_scale_shuffled").as<uint8_t>());
  }
  return in;
}

double expected_touched_experts(const MoeConfig& c) {
  const double R = c.n_routed_experts, k = c.n_experts_per_token;
  return c.n_shared_experts + R * (1.0 - std::pow(1.0 - k / R, c.bs));
}

namespace {

class MoeMxfp4Problem final : public harness::Problem {
 public:
  std::string name() const override { return "moe_mxfp4"; }
  std::string description() const override {
    return "DeepSeek-R1 MoE layer, MXFP4 weights, a4w4 semantics (amd-moe-mxfp4)";
  }
  std::vector<ShapeCase> test_shapes() const override {
    return {make_shape(4096, 1024, 256, 8, 8, 9371), make_shape(7168, 2048, 32, 8, 32, 2291),
            make_shape(4096, 1536, 64, 6, 128, 81934)};
  }
  std::vector<ShapeCase> benchmark_shapes() const override {
    struct B { int64_t d_expert, n_routed, bs; uint64_t seed; double us; };
    const B table[] = {{256, 256, 16, 9371, 152.7},  {256, 256, 128, 2291, 239.0}, {256, 256, 512, 81934, 336.5},
                       {512, 32, 16, 2291, 106.2},   {512, 32, 128, 81934, 141.1}, {512, 32, 512, 81934, 225.0},
                       {2048, 32, 512, 81934, 380.4}};
    std::vector<ShapeCase> out;
    for (const B& b : table) {
      out.push_back(make_shape(7168, b.d_expert, b.n_routed, 8, b.bs, b.seed));
      out.back().official_reference_us = b.us;
    }
    return out;
  }
  // Shapes from the command line: the spec's dimensions are multiples of 256 (so padded sizes equal real
  // ones, which the kernels rely on), one shared expert, k of the routed experts per token.
  std::string shape_error(const ShapeCase& s) const override {
    const int64_t dh = s.get("d_hidden"), de = s.get("d_expert"), r = s.get("n_routed"), k = s.get("k"),
                  bs = s.get("bs");
    if (dh < 256 || de < 256 || dh % 256 || de % 256) return "d_hidden and d_expert must be multiples of 256";
    if (dh > 16384 || de > 16384) return "d_hidden and d_expert must be at most 16384";
    if (r < 1 || r > 1024) return "n_routed must be in 1..1024";
    if (k < 1 || k > r) return "k must be in 1..n_routed";
    if (bs < 1 || bs > 65536) return "bs must be in 1..65536";
    // Raw and shuffled weights: 2 x 3 x d_expert x d_hidden x (0.5 + 1/32) bytes an expert.
    if (static_cast<double>(r + 1) * 3.19 * static_cast<double>(de) * static_cast<double>(dh) > 40e9)
      return "the weights (raw and shuffled) must fit in 40 GB: fewer experts or smaller dimensions";
    return "";
  }
  harness::Tolerance tolerance() const override { return {5e-2, 5e-2, 0.0}; }
  std::vector<TensorSpec> input_specs(const ShapeCase& s) const override { return moe_task::input_specs(config_of(s)); }
  TensorSpec output_spec(const ShapeCase& s) const override { return moe_task::output_spec(config_of(s)); }
  harness::HostInputs generate(const ShapeCase& s, uint64_t seed) const override {
    return generate_host(config_of(s), seed);
  }
  std::vector<double> oracle(const ShapeCase& s, const harness::HostInputs& in) const override {
    auto& mut = const_cast<harness::HostInputs&>(in);  // pointers only; the oracle reads
    return moe_task::oracle(make_args(config_of(s), pointers_of(mut), nullptr, nullptr, 0));
  }
  // Bytes: the touched experts' packed weights and scales (expected count under uniform routing,
  // roofline.md) plus hidden states, routing and output. The variant reads one layout of the
  // weights (raw or shuffled); both have the same size.
  harness::Cost cost(const ShapeCase& s, const std::vector<std::string>&) const override {
    const MoeConfig c = config_of(s);
    const double H = c.d_hidden, I = c.d_expert, M = c.bs, T = c.total_top_k;
    const double expert_bytes = 3.0 * I * H * (0.5 + 1.0 / 32.0);
    harness::Cost cost;
    cost.bytes = expected_touched_experts(c) * expert_bytes + M * H * 2.0 * 2.0 + M * T * 8.0;
    cost.flops = 2.0 * M * T * 3.0 * I * H;
    return cost;
  }
  // Measured (H200, 2026-11-29): against the float64 oracle the GPU reference and the cpu variant
  // show rel L2 1.61e-3 to 1.67e-3 on every test shape, three benchmark shapes and the golden cases,
  // which is just the bf16 rounding of the output (rounded to bf16, the oracle equals the official
  // output on all 4864 golden elements: no accumulation-order flips of the bf16/fp4 roundings inside).
  // v1-v3 equal the GPU reference bit for bit (rel L2 0): MXFP4 products summed in fp32 are nearly
  // always exact. 1e-2 leaves room for kernels that accumulate partial results in bf16, while a
  // kernel that drops each token's weakest routed expert shows 3.5e-2 (tests/test_moe_task.cpp; the
  // official check flags only 9 of its 2048 elements).
  double strict_rel_l2_limit(const std::vector<std::string>&) const override { return 1e-2; }
  std::size_t workspace_bytes(const harness::VariantEntry& v, const ShapeCase& s) const override {
    const MoeConfig c = config_of(s);
    return v.workspace_bytes(&c);
  }
  void invoke(const harness::VariantEntry& v, const ShapeCase& s, const harness::TensorPtrs& inputs, void* out,
              void* workspace, std::size_t workspace_bytes) const override {
    const MoeArgs a = make_args(config_of(s), inputs, out, workspace, workspace_bytes);
    v.launch(&a);
  }
};

}  // namespace

HARNESS_REGISTER_PROBLEM(MoeMxfp4Problem);

}  // namespace moe_task
