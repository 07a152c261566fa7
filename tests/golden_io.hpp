// Reader for the golden vectors in tests/data/golden (see the README there): one folder per case
// with manifest.json (meta + tensors: name -> dtype, shape, file) and raw little-endian .bin files,
// plus numerics.json with scalar tables. Throws std::runtime_error on anything inconsistent.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace golden {

struct GoldenTensor {
  std::string dtype;           // bf16 (uint16 bits), f32, i32, fp8_e4m3fn, fp4x2, e8m0
  std::vector<int64_t> shape;  // as in the manifest; fp4x2 shapes count bytes
  std::vector<uint8_t> bytes;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  // The elements as T (uint16_t for bf16, float, int32_t, uint8_t for the byte formats).
  template <class T>
  std::vector<T> as() const {
    if (bytes.size() % sizeof(T) != 0) throw std::runtime_error("golden: size not a multiple of the element type");
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
};

struct GoldenCase {
  std::string dir;
  nlohmann::json meta;
  std::map<std::string, GoldenTensor> tensors;

  const GoldenTensor& at(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw std::runtime_error("golden: no tensor '" + name + "' in " + dir);
    return it->second;
  }
};

inline int64_t golden_dtype_bytes(const std::string& dtype) {
  if (dtype == "bf16") return 2;
  if (dtype == "f32" || dtype == "i32") return 4;
  if (dtype == "fp8_e4m3fn" || dtype == "fp4x2" || dtype == "e8m0") return 1;
  throw std::runtime_error("golden: unknown dtype " + dtype);
}

inline std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("golden: cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("golden: cannot open " + path);
  return nlohmann::json::parse(f);
}

// The golden data folder, e.g. golden_path("mla_bs2_kv64") or golden_path("numerics.json").
inline std::string golden_path(const std::string& name) {
#ifdef HARNESS_TEST_DATA_DIR
  return std::string(HARNESS_TEST_DATA_DIR) + "/golden/" + name;
#else
  return "tests/data/golden/" + name;
#endif
}

inline GoldenCase load_golden(const std::string& dir) {
  GoldenCase c;
  c.dir = dir;
  const nlohmann::json manifest = read_json(dir + "/manifest.json");
  c.meta = manifest.at("meta");
  for (const auto& [name, t] : manifest.at("tensors").items()) {
    GoldenTensor g;
    g.dtype = t.at("dtype").get<std::string>();
    g.shape = t.at("shape").get<std::vector<int64_t>>();
    g.bytes = read_file_bytes(dir + "/" + t.at("file").get<std::string>());
    if (static_cast<int64_t>(g.bytes.size()) != g.numel() * golden_dtype_bytes(g.dtype))
      throw std::runtime_error("golden: " + dir + "/" + name + " has the wrong size for its shape");
    c.tensors.emplace(name, std::move(g));
  }
  return c;
}

inline nlohmann::json load_golden_numerics() { return read_json(golden_path("numerics.json")); }

}  // namespace golden
