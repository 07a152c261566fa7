// Named tensors with the official dtypes and shapes, held on the host.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

// Storage types as the official problems hand them over. fp4x2 packs two e2m1 codes in a byte
// (low nibble = even element); shapes of fp4x2 tensors count bytes, as torch's view does.
enum class DType : uint8_t { bf16, f32, i32, fp8_e4m3fn, fp4x2, e8m0 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);

struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  int64_t numel() const;
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype); }
};

struct HostTensor {
  TensorSpec spec;
  std::vector<uint8_t> data;  // spec.bytes() bytes, little-endian
  explicit HostTensor(TensorSpec s) : spec(std::move(s)), data(spec.bytes()) {}
  template <class T> T* as() { return reinterpret_cast<T*>(data.data()); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data.data()); }
};

// The full input tuple of one problem instance, in the problem's declared order.
struct HostInputs {
  std::vector<HostTensor> tensors;
  HostTensor& at(std::string_view name);
  const HostTensor& at(std::string_view name) const;
};

}  // namespace harness
