// Test entry point for Catch2 v2; v3 links Catch2::Catch2WithMain instead.
#if !__has_include(<catch2/catch_all.hpp>)
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#endif
