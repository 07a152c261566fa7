// Atomic file replacement: a reader sees the old content or the new, never a partial file.
#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace harness {

// Writes to a temporary file in the target's directory, fsyncs it, then renames it over `path`
// (and fsyncs the directory). If writing fails or `produce` throws, the temporary file is removed,
// the old file is left intact, and the error is rethrown (std::runtime_error for I/O errors).
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& produce);
void write_file_atomic(const std::string& path, const std::string& content);

// Whole file as a string; throws std::runtime_error naming the path.
std::string read_file(const std::string& path);

}  // namespace harness
