// `harness export <problem> --variant <name> [-o submission.py] [--source-dir DIR]`: one official
// submission file from a GPU variant's source (harness/export.hpp). Rule violations, unknown
// problems and variants: one line on stderr, exit 2.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "harness/atomic_file.hpp"
#include "harness/cli.hpp"
#include "harness/export.hpp"

namespace harness {
namespace {

struct ExportArgs {
  std::string problem, variant, output = "submission.py", source_dir;
};

int export_command(const ExportArgs& o) {
  exporter::Submission sub;
  try {
    sub = exporter::build_submission(exporter::locate_variant(o.problem, o.variant, o.source_dir));
  } catch (const exporter::ExportError& e) {
    throw cli::UsageError(e.what());
  }
  try {
    write_file_atomic(o.output, sub.text);
  } catch (const std::exception& e) {
    std::cerr << "harness: error: " << e.what() << "\n";
    return cli::kExitFailed;
  }
  std::cout << fmt::format("wrote {} ({} bytes): {} variant {}, {} files inlined, reads {}\n", o.output,
                           sub.text.size(), o.problem, o.variant, sub.files.size(), fmt::join(sub.reads, ","));
  return cli::kExitOk;
}

cli::Command setup(CLI::App& root) {
  auto* app = root.add_subcommand("export", "Write a GPU variant as an official submission file (submission.py)");
  auto o = std::make_shared<ExportArgs>();
  app->add_option("problem", o->problem, "mla_decode | moe_mxfp4")->required();
  app->add_option("--variant,-v", o->variant, "GPU variant to export")->required();
  app->add_option("--output,-o", o->output, "File to write (atomically)")->capture_default_str();
  app->add_option("--source-dir", o->source_dir,
                  "Project root holding problems/ (default: the tree this build was configured from, else .)");
  return {app, [o] { return export_command(*o); }};
}

}  // namespace
}  // namespace harness

HARNESS_REGISTER_COMMAND("export", harness::setup);
