#include "tessera/core/stop_signal.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace tessera::core {
namespace {

std::atomic<int> received{0};
std::atomic<RunPhase> phase{RunPhase::setup};
std::mutex action_mutex;
std::function<void(RunPhase)> forced_stop_action;

extern "C" void record_stop_signal(int signal) { received.store(signal); }

/// Polls every 100 ms; ends the process when a signal has waited longer than its phase allows.
void watch(double grace_s, double warning_grace_s, double setup_delay_s, int exit_code) {
  using clock = std::chrono::steady_clock;
  const auto poll = std::chrono::milliseconds(100);
  clock::time_point seen{};
  bool signalled = false;
  for (;; std::this_thread::sleep_for(poll)) {
    if (received.load() == 0) continue;
    if (!signalled) seen = clock::now(), signalled = true;
    const RunPhase now = phase.load();
    if (now == RunPhase::finishing) continue;
    const double waited = std::chrono::duration<double>(clock::now() - seen).count();
    const double allowed = now == RunPhase::setup       ? setup_delay_s
                           : received.load() == SIGUSR1 ? warning_grace_s
                                                        : grace_s;
    if (waited < allowed) continue;
    {
      std::lock_guard<std::mutex> lock(action_mutex);
      if (forced_stop_action) forced_stop_action(now);
    }
    std::fflush(nullptr);
    std::_Exit(exit_code);
  }
}

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

void set_run_phase(RunPhase p) { phase.store(p); }

RunPhase run_phase() { return phase.load(); }

void start_stop_watchdog(double grace_s, double warning_grace_s, double setup_delay_s,
                         int exit_code) {
  static std::once_flag started;
  std::call_once(started, [&] {
    std::thread(watch, grace_s, warning_grace_s, setup_delay_s, exit_code).detach();
  });
}

void set_forced_stop_action(std::function<void(RunPhase interrupted)> action) {
  std::lock_guard<std::mutex> lock(action_mutex);
  forced_stop_action = std::move(action);
}

}  // namespace tessera::core
