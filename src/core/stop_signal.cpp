#include "tessera/core/stop_signal.hpp"

#include <atomic>
#include <csignal>

namespace tessera::core {
namespace {

std::atomic<int> received{0};

extern "C" void record_stop_signal(int signal) { received.store(signal); }

}  // namespace

void install_stop_handlers() {
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_handler = record_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // blocking calls (MPI, file I/O) resume instead of failing
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGUSR1, &action, nullptr);
    return true;
  }();
  (void)installed;
}

int stop_signal() { return received.load(); }

const char* stop_signal_name() {
  switch (received.load()) {
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "";
  }
}

}  // namespace tessera::core
