// Catch2 v2 (Debian 12) or v3 (Ubuntu 24.04, the GPU machine): one include for the tests.
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
