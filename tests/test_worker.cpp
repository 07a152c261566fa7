// Worker isolation: the real binary's hidden `worker-selftest` misbehaves on purpose.
#include <signal.h>

#include <chrono>
#include <filesystem>

#include "harness/worker.hpp"
#include "tests/catch.hpp"

using namespace harness;

namespace {
WorkerOutcome selftest(const std::string& what, double timeout_s = 30) {
  const std::string result = temp_result_path();
  auto w = run_worker({HARNESS_BINARY, "worker-selftest", what, "--result", result}, result, timeout_s, false);
  CHECK_FALSE(std::filesystem::exists(result));  // cleaned up either way
  return w;
}
}  // namespace

TEST_CASE("worker: a clean worker hands back its result") {
  const auto w = selftest("ok");
  CHECK(w.ok);
  CHECK(w.exit_code == 0);
  CHECK(w.result == "{\"selftest\":\"ok\"}\n");
}

TEST_CASE("worker: crash, abort, exit without result, hang are reported") {
  auto w = selftest("crash");
  CHECK_FALSE(w.ok);
  CHECK(w.signal == SIGSEGV);
  CHECK(w.reason == "crashed: SIGSEGV");

  w = selftest("abort");
  CHECK_FALSE(w.ok);
  CHECK(w.signal == SIGABRT);
  CHECK(w.reason == "aborted: selftest: device reported an illegal address");

  w = selftest("exit");
  CHECK_FALSE(w.ok);
  CHECK(w.exit_code == 3);
  CHECK(w.reason == "exited with code 3: selftest: giving up");

  const auto t0 = std::chrono::steady_clock::now();
  w = selftest("hang", 1.0);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_FALSE(w.ok);
  CHECK(w.reason == "timed out after 1 s");
  CHECK(s < 5);
}

TEST_CASE("worker: last_line skips progress redraws and blank lines") {
  CHECK(last_line("a\nb\r\x1b[Kprogress 3/8\n\n") == "progress 3/8");
  CHECK(last_line("first\nsecond\n") == "second");
  CHECK(last_line("terminate called\n  what():  illegal address\n") == "what():  illegal address");
  CHECK(last_line("") == "");
  CHECK(last_line("msg\n\r\x1b[Kprogress\r\x1b[K") == "msg");  // a cleared progress line leaves the line before it
  CHECK(signal_name(SIGBUS) == "SIGBUS");
  CHECK(signal_name(62) == "signal 62");
}
