#include "process.h"

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

// In the child: sets the environment and runs the program (exit 127 when it cannot).
[[noreturn]] void exec_child(const std::string& program, const std::vector<std::string>& args,
                             const Environment& env) {
  for (const auto& [name, value] : env) {
    if (value)
      setenv(name.c_str(), value->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  _exit(127);
}

int exit_code_of(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const Environment& env, const std::optional<std::string>& input) {
  int out_pipe[2], err_pipe[2], in_pipe[2] = {-1, -1};
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  if (input && pipe(in_pipe) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
    if (input) {
      dup2(in_pipe[0], STDIN_FILENO);
      close(in_pipe[0]), close(in_pipe[1]);
    }
    exec_child(program, args, env);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (input) {
    close(in_pipe[0]);
    for (size_t at = 0; at < input->size();) {
      ssize_t n = write(in_pipe[1], input->data() + at, input->size() - at);
      if (n <= 0) break;  // the child closed its stdin early; what it printed still tells
      at += static_cast<size_t>(n);
    }
    close(in_pipe[1]);
  }

  // Both pipes are drained together so a child filling one of them cannot block forever.
  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[k].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[k]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
      }
    }
  }
  result.exit_code = exit_code_of(pid);
  return result;
}

std::string TerminalResult::terminal() const {
  std::string all;
  for (const std::string& r : reads) all += r;
  return all;
}

TerminalResult run_in_terminal(const std::string& program, const std::vector<std::string>& args,
                               const Environment& env, TerminalSide side, int columns) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  winsize size{};
  size.ws_row = 40;
  size.ws_col = static_cast<unsigned short>(columns);
  int master = -1;
  // forkpty makes the terminal the child's stdin, stdout and stderr; the piped stream and stdin
  // are then set apart.
  pid_t pid = forkpty(&master, nullptr, nullptr, &size);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) {
    dup2(pipe_fds[1], side == TerminalSide::kStdout ? STDERR_FILENO : STDOUT_FILENO);
    close(pipe_fds[0]), close(pipe_fds[1]);
    int null_in = open("/dev/null", O_RDONLY);
    dup2(null_in, STDIN_FILENO);
    close(null_in);
    exec_child(program, args, env);
  }
  close(pipe_fds[1]);
  TerminalResult result;
  pollfd fds[2] = {{master, POLLIN, 0}, {pipe_fds[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      // The terminal's end reads EIO once the child has exited and closed its side.
      ssize_t n = read(fds[k].fd, buf, sizeof buf);
      if (n > 0) {
        std::string piece(buf, static_cast<size_t>(n));
        if (k == 1) {
          result.piped += piece;
          continue;
        }
        std::string plain;
        for (size_t i = 0; i < piece.size(); ++i)
          if (!(piece[i] == '\r' && i + 1 < piece.size() && piece[i + 1] == '\n'))
            plain += piece[i];
        result.reads.push_back(plain);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
      }
    }
  }
  result.exit_code = exit_code_of(pid);
  return result;
}

}  // namespace rlx::cli::test
