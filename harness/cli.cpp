#include "harness/cli.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/build_info.hpp"

namespace harness::cli {

namespace {

std::map<std::string, CommandSetup>& command_registry() {  // sorted: stable help output
  static std::map<std::string, CommandSetup> r;
  return r;
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "harness: error: %s\n", one_line(msg).c_str());
  return kExitUsage;
}

}  // namespace

CommandRegistrar::CommandRegistrar(const char* name, CommandSetup setup) { command_registry()[name] = setup; }

int main(int argc, char** argv) {
  CLI::App app{"Competition harness for GPU MODE's AMD kernel challenges (mla_decode, moe_mxfp4)", "harness"};
  app.set_version_flag("--version", build_info().version + " (" + build_info().backend + " build, " +
                                        build_info().git_commit + ")");
  app.require_subcommand(1);
  std::vector<Command> commands;
  std::vector<std::string> names;
  for (const auto& [name, setup] : command_registry()) {
    commands.push_back(setup(app));
    if (!commands.back().app->get_group().empty()) names.push_back(name);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string msg = e.what();
    if (app.get_subcommands().empty()) {
      const bool unknown = argc > 1 && argv[1][0] != '-' && !command_registry().count(argv[1]);
      if (unknown) msg = fmt::format("unknown command '{}'", argv[1]);
      msg += fmt::format(" (commands: {})", fmt::join(names, ", "));
    }
    return usage_error(msg);
  }
  try {
    if (const std::string dup = duplicate_variant(variant_registry()); !dup.empty())
      throw std::runtime_error("this build is broken: " + dup);
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const UsageError& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {  // e.g. no GPU: one line, and a worker's parent reports it
    std::fprintf(stderr, "harness: error: %s\n", one_line(e.what()).c_str());
    return kExitFailed;
  }
  return usage_error("no command given");
}

const Problem& require_problem(const std::string& name) {
  if (const Problem* p = find_problem(name)) return *p;
  std::vector<std::string> valid;
  for (const auto* p : problem_registry()) valid.push_back(p->name());
  throw UsageError(fmt::format("unknown problem '{}' (valid: {})", name, fmt::join(valid, ", ")));
}

std::vector<std::string> uncompiled_gpu_variants(const std::string& problem) {
  std::vector<std::string> out;
  for (const auto& entry : split_list(build_info().all_gpu_variants)) {
    const auto colon = entry.find(':');
    if (colon == std::string::npos || entry.substr(0, colon) != problem) continue;
    const auto name = entry.substr(colon + 1);
    if (!find_variant(problem, name)) out.push_back(name);
  }
  return out;
}

const VariantEntry& require_variant(const Problem& p, const std::string& name) {
  if (const VariantEntry* v = find_variant(p.name(), name)) return *v;
  std::vector<std::string> valid;
  for (const auto& v : variant_registry())
    if (v.problem == p.name()) valid.push_back(v.name);
  const auto missing = uncompiled_gpu_variants(p.name());
  if (std::find(missing.begin(), missing.end(), name) != missing.end())
    throw UsageError(fmt::format("variant '{}' of {} is a GPU variant, not compiled into this {} build (available: {})",
                                 name, p.name(), build_info().backend, fmt::join(valid, ", ")));
  throw UsageError(fmt::format("unknown variant '{}' for {} (valid: {})", name, p.name(), fmt::join(valid, ", ")));
}

bool variant_name_less(const std::string& a, const std::string& b) {
  auto number = [](const std::string& n) {  // v2 before v10; named variants (reference, cpu) first
    return n.size() > 1 && n[0] == 'v' && std::isdigit(static_cast<unsigned char>(n[1])) ? std::atoi(n.c_str() + 1) : -1;
  };
  return std::make_pair(number(a), a) < std::make_pair(number(b), b);
}

std::vector<const VariantEntry*> select_variants(const Problem& p, const std::vector<std::string>& names) {
  std::vector<const VariantEntry*> out;
  auto add = [&](const VariantEntry* v) {
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  for (const auto& name : names) {
    if (name != "all" && name != "gpu") {
      out.push_back(&require_variant(p, name));  // as given: naming one twice runs it twice
      continue;
    }
    std::vector<const VariantEntry*> group;
    for (const auto& v : variant_registry())
      if (v.problem == p.name() && (name == "all" || v.backend != Backend::cpu)) group.push_back(&v);
    std::sort(group.begin(), group.end(),
              [](const VariantEntry* a, const VariantEntry* b) { return variant_name_less(a->name, b->name); });
    if (group.empty())
      throw UsageError(fmt::format("--variant {}: no such variants of {} in this {} build", name, p.name(),
                                   build_info().backend));
    for (const auto* v : group) add(v);
  }
  return out;
}

std::vector<int> parse_shape_list(const std::string& spec, std::size_t count, const std::string& what) {
  std::vector<int> out;
  const auto range = count ? fmt::format("0-{}", count - 1) : std::string("none");
  if (spec == "all" || spec.empty()) {
    for (std::size_t i = 0; i < count; ++i) out.push_back(static_cast<int>(i));
    return out;
  }
  for (const auto& tok : split_list(spec)) {
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(tok, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != tok.size() || v < 0 || static_cast<std::size_t>(v) >= count)
      throw UsageError(fmt::format("bad shape index '{}' for {} (valid: all or indices {})", tok, what, range));
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) == out.end()) out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw UsageError(fmt::format("no shapes selected for {} (valid: all or indices {})", what, range));
  return out;
}

}  // namespace harness::cli
