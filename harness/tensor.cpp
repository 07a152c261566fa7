#include "harness/tensor.hpp"

#include <stdexcept>

namespace harness {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::bf16: return 2;
    case DType::f32: return 4;
    case DType::i32: return 4;
    case DType::fp8_e4m3fn: return 1;
    case DType::fp4x2: return 1;
    case DType::e8m0: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::i32: return "i32";
    case DType::fp8_e4m3fn: return "fp8_e4m3fn";
    case DType::fp4x2: return "fp4x2";
    case DType::e8m0: return "e8m0";
  }
  return "?";
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

HostTensor& HostInputs::at(std::string_view name) {
  for (auto& t : tensors)
    if (t.spec.name == name) return t;
  throw std::out_of_range("no input tensor named '" + std::string(name) + "'");
}

const HostTensor& HostInputs::at(std::string_view name) const {
  return const_cast<HostInputs*>(this)->at(name);
}

}  // namespace harness
