#include "interrupt.hpp"

#include <unistd.h>

#include <csignal>
#include <cstring>

#include "gknn/io.hpp"

namespace gknn::cli {
namespace {

/// Only async-signal-safe calls: unlink (inside remove_partial_outputs), write, _exit.
extern "C" void on_interrupt(int signal) {
  gknn::remove_partial_outputs();
  const char* message = signal == SIGINT    ? "gknn: error: interrupted by SIGINT; partial outputs removed\n"
                        : signal == SIGTERM ? "gknn: error: terminated by SIGTERM; partial outputs removed\n"
                                            : "gknn: error: hung up (SIGHUP); partial outputs removed\n";
  [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, message, std::strlen(message));
  ::_exit(128 + signal);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal ignored by the parent (nohup, a shell's background job) stays ignored, as users expect.
    struct sigaction previous {};
    if (sigaction(signal, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
    sigaction(signal, &action, nullptr);
  }
}

}  // namespace gknn::cli
