// Worker isolation: run a command (this executable again) in its own process group, with a time
// limit, and report how it ended. The parent never touches the GPU; only workers do.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace harness {

struct WorkerOutcome {
  bool ok = false;            // exited 0 and left a result file
  std::string result;         // the result file's content (when ok)
  std::string reason;         // when not ok: "crashed: SIGSEGV", "timed out after 5 s", "aborted: <line>", ...
  std::string last_stderr_line;
  int exit_code = -1;         // when it exited
  int signal = 0;             // when a signal ended it
};

// Spawns argv (argv[0] = executable path) in a new process group. Its stderr is forwarded to ours
// (when forward_stderr) and its last line kept for the report. After timeout_s the whole group is
// killed. The worker is expected to write its result to result_path; the file is removed afterwards.
WorkerOutcome run_worker(const std::vector<std::string>& argv, const std::string& result_path, double timeout_s,
                         bool forward_stderr = true);

// "SIGSEGV", "SIGABRT", ..., or "signal N".
std::string signal_name(int sig);

// Path of the running executable (/proc/self/exe), for re-executing ourselves.
std::string self_executable();

// A fresh path for a worker's result file (in $TMPDIR or /tmp); the file is not created.
std::string temp_result_path();

// Last non-empty line of a text, with terminal progress redraws (\r, escape sequences) removed.
std::string last_line(const std::string& text);

// Misbehaves as told, for the worker tests: "crash" (SIGSEGV), "abort" (message then abort()),
// "hang", "exit" (exit code 3 without a result), "ok" (writes {"selftest":"ok"} to result_path).
int worker_selftest(const std::string& what, const std::string& result_path);

}  // namespace harness
