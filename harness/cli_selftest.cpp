// Hidden `harness worker-selftest crash|abort|hang|exit|ok --result FILE`: a worker that misbehaves
// on purpose, so that tests can check how the parent reports it.
#include "harness/cli.hpp"
#include "harness/worker.hpp"

namespace harness::cli {
namespace {

struct SelftestArgs {
  std::string what;
  std::string result;
};

Command setup(CLI::App& root) {
  auto a = std::make_shared<SelftestArgs>();
  auto* app = root.add_subcommand("worker-selftest", "")->group("");
  app->add_option("what", a->what)->required();
  app->add_option("--result", a->result);
  return {app, [a] { return worker_selftest(a->what, a->result); }};
}

}  // namespace
}  // namespace harness::cli

HARNESS_REGISTER_COMMAND("worker-selftest", harness::cli::setup);
