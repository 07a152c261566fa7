// A one-line progress display on stderr, redrawn in place; silent unless stderr is a terminal
// (or the parent harness, which forwards a worker's stderr to its terminal, asked for it).
#pragma once
#include <string>

namespace harness {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled);
  static bool stderr_is_terminal();
  void update(const std::string& text);  // replaces the current line
  void clear();                          // erases it (before normal output)
  ~ProgressLine() { clear(); }

 private:
  bool enabled_;
  bool shown_ = false;
};

}  // namespace harness
