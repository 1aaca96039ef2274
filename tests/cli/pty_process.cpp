#include "pty_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace rlx::cli::test {
namespace {

// Reads what is there; false once the other side has closed (a pty's master reads EIO then).
bool drain(int fd, std::string& into) {
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    into.append(buf, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && errno == EINTR;
}

}  // namespace

ProcessResult run_with_terminal_stderr(const std::string& program,
                                       const std::vector<std::string>& args,
                                       const std::map<std::string, std::optional<std::string>>& env,
                                       int columns) {
  int master = -1, slave = -1;
  winsize size{};
  size.ws_row = 40;
  size.ws_col = static_cast<unsigned short>(columns);
  if (::openpty(&master, &slave, nullptr, nullptr, &size) != 0)
    throw std::runtime_error("openpty failed");
  int out_pipe[2];
  if (::pipe(out_pipe) != 0) throw std::runtime_error("pipe failed");

  std::vector<std::string> argv_text = {program};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::setsid();
    int null_in = ::open("/dev/null", O_RDONLY);
    ::dup2(null_in, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(slave, STDERR_FILENO);
    ::close(master);
    ::close(slave);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    for (const auto& [name, value] : env) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(slave);
  ::close(out_pipe[1]);

  ProcessResult r;
  bool err_open = true, out_open = true;
  while (err_open || out_open) {
    // A negative descriptor is one poll() skips: the side that has closed.
    pollfd fds[2] = {{err_open ? master : -1, POLLIN, 0}, {out_open ? out_pipe[0] : -1, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (err_open && fds[0].revents) err_open = drain(master, r.err);
    if (out_open && fds[1].revents) out_open = drain(out_pipe[0], r.out);
  }
  ::close(master);
  ::close(out_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace rlx::cli::test
