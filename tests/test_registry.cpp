#include "tests/catch.hpp"
#include "harness/variant_registry.hpp"

TEST_CASE("split_list splits comma-separated input names") {
  auto r = harness::split_list("q, kv_fp8,,kv_fp8_scale ");
  REQUIRE(r.size() == 3);
  CHECK(r[0] == "q");
  CHECK(r[2] == "kv_fp8_scale");
  CHECK(harness::split_list("").empty());
}
