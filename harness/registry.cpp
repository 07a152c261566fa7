#include <cctype>
#include <stdexcept>

#include "harness/problem.hpp"
#include "harness/variant_registry.hpp"

namespace harness {

std::vector<VariantEntry>& variant_registry() {
  static std::vector<VariantEntry> r;
  return r;
}

const VariantEntry* find_variant(const std::string& problem, const std::string& name) {
  for (const auto& v : variant_registry())
    if (v.problem == problem && v.name == name) return &v;
  return nullptr;
}

std::string duplicate_variant(const std::vector<VariantEntry>& registry) {
  for (std::size_t i = 0; i < registry.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (registry[i].problem == registry[j].problem && registry[i].name == registry[j].name)
        return registry[i].problem + " variant '" + registry[i].name + "' is registered twice (" +
               registry[j].source_file + ", " + registry[i].source_file + ")";
  return "";
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (!std::isspace(static_cast<unsigned char>(s[i]))) {
      cur += s[i];
    }
  }
  return out;
}

std::vector<const Problem*>& problem_registry() {
  static std::vector<const Problem*> r;
  return r;
}

const Problem* find_problem(const std::string& name) {
  for (const auto* p : problem_registry())
    if (p->name() == name) return p;
  return nullptr;
}

int64_t ShapeCase::get(const std::string& key) const {
  for (const auto& [k, v] : params)
    if (k == key) return v;
  throw std::out_of_range("shape has no parameter '" + key + "'");
}

std::string ShapeCase::label() const {
  std::string s;
  for (const auto& [k, v] : params) {
    if (!s.empty()) s += ' ';
    s += k + "=" + std::to_string(v);
  }
  return s;
}

}  // namespace harness
