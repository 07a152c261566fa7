#include <cctype>
#include <cstdlib>
#include <set>

#include "harness/cli.hpp"
#include "harness/problem.hpp"
#include "harness/variant_registry.hpp"
#include "tests/catch.hpp"

TEST_CASE("split_list splits comma-separated input names") {
  auto r = harness::split_list("q, kv_fp8,,kv_fp8_scale ");
  REQUIRE(r.size() == 3);
  CHECK(r[0] == "q");
  CHECK(r[2] == "kv_fp8_scale");
  CHECK(harness::split_list("").empty());
}

TEST_CASE("variant registry: every (problem, name) once; a second registration is reported with both files") {
  CHECK(harness::duplicate_variant(harness::variant_registry()).empty());
  auto entry = [](const char* name, const char* file) {
    harness::VariantEntry e{"moe_mxfp4", name, "", harness::Backend::gpu, {}, nullptr, nullptr, file};
    return e;
  };
  std::vector<harness::VariantEntry> r{entry("v1", "v1.hip"), entry("v2", "v2.hip")};
  CHECK(harness::duplicate_variant(r).empty());
  r.push_back(entry("v2", "v2c.hip"));
  const std::string d = harness::duplicate_variant(r);
  CHECK(d.find("'v2' is registered twice") != std::string::npos);
  CHECK(d.find("v2.hip, v2c.hip") != std::string::npos);
  r.back().problem = "mla_decode";  // the same name in another problem is fine
  CHECK(harness::duplicate_variant(r).empty());
}

TEST_CASE("variant groups: \"all\" is every registered variant once, numbered ones in number order") {
  for (const auto* p : harness::problem_registry()) {
    const auto picked = harness::cli::select_variants(*p, {"all", "all"});
    std::size_t registered = 0;
    for (const auto& v : harness::variant_registry()) registered += v.problem == p->name();
    CHECK(picked.size() == registered);
    std::set<const harness::VariantEntry*> unique(picked.begin(), picked.end());
    CHECK(unique.size() == picked.size());
    int last = 0;
    for (std::size_t i = 0; i < picked.size(); ++i) {
      const std::string& n = picked[i]->name;
      if (n.size() < 2 || n[0] != 'v' || !std::isdigit(static_cast<unsigned char>(n[1]))) continue;
      INFO(p->name() << ": " << n << " after v" << last);
      CHECK(std::atoi(n.c_str() + 1) > last);
      last = std::atoi(n.c_str() + 1);
    }
  }
}
