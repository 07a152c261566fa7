#include "harness/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "harness/atomic_file.hpp"

extern char** environ;

namespace harness {

namespace {

// The worker being waited for, so that an interrupt of the parent takes the worker down too
// (it lives in its own process group and would not see the terminal's signal).
std::atomic<pid_t> g_worker_group{0};

void forward_interrupt(int sig) {
  const pid_t g = g_worker_group.load();
  if (g > 0) ::kill(-g, SIGKILL);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_interrupt_forwarding() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, forward_interrupt);
}

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal " + std::to_string(sig);
  }
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

std::string temp_result_path() {
  const char* dir = std::getenv("TMPDIR");
  std::random_device rd;
  return (std::filesystem::path(dir && *dir ? dir : "/tmp") /
          ("harness-worker-" + std::to_string(::getpid()) + "-" + std::to_string(rd()) + ".json"))
      .string();
}

std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) {
    const auto cr = line.find_last_of('\r');
    if (cr != std::string::npos) line = line.substr(cr + 1);
    std::string clean;  // drop ANSI escape sequences (ESC [ ... letter)
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\x1b') {
        ++i;
        if (i < line.size() && line[i] == '[')
          while (++i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i]))) {}
        continue;  // the loop's ++i also skips the final letter
      }
      clean += line[i];
    }
    while (!clean.empty() && std::isspace(static_cast<unsigned char>(clean.back()))) clean.pop_back();
    clean.erase(0, clean.find_first_not_of(" \t"));
    if (!clean.empty()) last = clean;
  }
  return last;
}

WorkerOutcome run_worker(const std::vector<std::string>& argv, const std::string& result_path, double timeout_s,
                         bool forward_stderr) {
  if (argv.empty()) throw std::invalid_argument("run_worker: empty argv");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);  // dup2 clears CLOEXEC on fd 2
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills everything it started

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  install_interrupt_forwarding();
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error("cannot start worker '" + argv[0] + "': " + std::strerror(rc));
  }
  g_worker_group.store(pid);

  WorkerOutcome w;
  std::string tail;  // last few KiB of its stderr
  const auto t0 = std::chrono::steady_clock::now();
  bool pipe_open = true, exited = false, timed_out = false;
  int status = 0;
  while (!exited) {
    if (pipe_open) {
      pollfd pfd{fds[0], POLLIN, 0};
      if (::poll(&pfd, 1, 100) > 0) {
        char buf[4096];
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n > 0) {
          if (forward_stderr) (void)!::write(STDERR_FILENO, buf, static_cast<size_t>(n));
          tail.append(buf, static_cast<size_t>(n));
          if (tail.size() > 16384) tail.erase(0, tail.size() - 8192);
        } else if (n == 0 || errno != EINTR) {
          pipe_open = false;
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) exited = true;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!exited && elapsed > timeout_s) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      exited = timed_out = true;
    }
  }
  ::kill(-pid, SIGKILL);  // anything it left running in its group (ESRCH if none)
  g_worker_group.store(0);
  // Drain what is still buffered in the pipe (a leftover grandchild could hold it open: don't block).
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  char buf[4096];
  for (ssize_t n; pipe_open && (n = ::read(fds[0], buf, sizeof buf)) > 0;) {
    if (forward_stderr) (void)!::write(STDERR_FILENO, buf, static_cast<size_t>(n));
    tail.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);

  w.last_stderr_line = last_line(tail);
  const auto with_line = [&](std::string s) { return w.last_stderr_line.empty() ? s : s + ": " + w.last_stderr_line; };
  std::error_code ec;
  const bool have_result = std::filesystem::exists(result_path, ec);
  if (timed_out) {
    w.reason = "timed out after " + std::to_string(static_cast<long long>(timeout_s)) + " s";
  } else if (WIFSIGNALED(status)) {
    w.signal = WTERMSIG(status);
    w.reason = w.signal == SIGABRT ? with_line("aborted") : "crashed: " + signal_name(w.signal);
  } else if (WIFEXITED(status)) {
    w.exit_code = WEXITSTATUS(status);
    if (w.exit_code == 0 && have_result) {
      try {
        w.result = read_file(result_path);
        w.ok = true;
      } catch (const std::exception& e) {
        w.reason = e.what();
      }
    } else if (w.exit_code == 0) {
      w.reason = "exited without a result";
    } else {
      w.reason = with_line("exited with code " + std::to_string(w.exit_code));
    }
  }
  std::filesystem::remove(result_path, ec);
  return w;
}

int worker_selftest(const std::string& what, const std::string& result_path) {
  if (what == "crash") {
    ::raise(SIGSEGV);
  } else if (what == "abort") {
    std::fprintf(stderr, "selftest: device reported an illegal address\n");
    std::abort();
  } else if (what == "hang") {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  } else if (what == "exit") {
    std::fprintf(stderr, "selftest: giving up\n");
    return 3;
  } else if (what == "ok") {
    write_file_atomic(result_path, std::string("{\"selftest\":\"ok\"}\n"));
    return 0;
  }
  std::fprintf(stderr, "unknown selftest '%s' (valid: crash, abort, hang, exit, ok)\n", what.c_str());
  return 2;
}

}  // namespace harness
