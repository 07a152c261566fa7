// `harness export <problem> --variant <name> [-o submission.py] [--source-dir DIR]`: one official
// submission file from a GPU variant's source (harness/export.hpp); `--variant gpu -o DIR`: all of them. Rule violations, unknown
// problems and variants: one line on stderr, exit 2.
#include <algorithm>
#include <filesystem>
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

int export_one(const std::string& problem, const std::string& variant, const std::string& output,
               const std::string& source_dir) {
  exporter::Submission sub;
  try {
    sub = exporter::build_submission(exporter::locate_variant(problem, variant, source_dir));
  } catch (const exporter::ExportError& e) {
    throw cli::UsageError(e.what());
  }
  try {
    write_file_atomic(output, sub.text);
  } catch (const std::exception& e) {
    std::cerr << "harness: error: " << e.what() << "\n";
    return cli::kExitFailed;
  }
  std::cout << fmt::format("wrote {} ({} bytes): {} variant {}, {} files inlined, reads {}\n", output,
                           sub.text.size(), problem, variant, sub.files.size(), fmt::join(sub.reads, ","));
  return cli::kExitOk;
}

// The file a variant is written to inside a directory (the names the device scripts read).
std::string file_in(const std::string& dir, const std::string& problem, const std::string& variant) {
  return (std::filesystem::path(dir) / fmt::format("{}__{}.py", problem, variant)).string();
}

// --variant gpu: every GPU variant, as OUTPUT_DIR/<problem>__<variant>.py.
int export_all(const ExportArgs& o) {
  const auto names = exporter::exportable_variants(o.problem);
  if (names.empty()) throw cli::UsageError(fmt::format("--variant gpu: {} has no GPU variants", o.problem));
  std::error_code ec;
  std::filesystem::create_directories(o.output, ec);
  if (!std::filesystem::is_directory(o.output))
    throw cli::UsageError(fmt::format("--variant gpu writes one file per variant: -o {} must be a directory", o.output));
  int rc = cli::kExitOk;
  for (const auto& v : names) {
    rc = std::max(rc, export_one(o.problem, v, file_in(o.output, o.problem, v), o.source_dir));
  }
  return rc;
}

int export_command(const ExportArgs& o) {
  if (o.variant == "gpu") return export_all(o);
  // -o naming an existing directory: the file goes inside it, under the name --variant gpu would give it.
  const bool into_dir = std::filesystem::is_directory(o.output);
  return export_one(o.problem, o.variant, into_dir ? file_in(o.output, o.problem, o.variant) : o.output, o.source_dir);
}

cli::Command setup(CLI::App& root) {
  auto* app = root.add_subcommand("export", "Write a GPU variant as an official submission file (submission.py)");
  auto o = std::make_shared<ExportArgs>();
  app->add_option("problem", o->problem, "mla_decode | moe_mxfp4")->required();
  app->add_option("--variant,-v", o->variant, "GPU variant to export; gpu: every one, into the -o directory")
      ->required();
  app->add_option("--output,-o", o->output, "File to write (atomically), or a directory to write <problem>__<variant>.py into (required with --variant gpu)")
      ->capture_default_str();
  app->add_option("--source-dir", o->source_dir,
                  "Project root holding problems/ (default: the tree this build was configured from, else .)");
  return {app, [o] { return export_command(*o); }};
}

}  // namespace
}  // namespace harness

HARNESS_REGISTER_COMMAND("export", harness::setup);
