#include "harness/term.hpp"

#include <unistd.h>

#include <cstdio>

namespace harness {

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled) {}

bool ProgressLine::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void ProgressLine::update(const std::string& text) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\x1b[K%s", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !shown_) return;
  std::fprintf(stderr, "\r\x1b[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace harness
