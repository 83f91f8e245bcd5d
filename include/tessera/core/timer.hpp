#pragma once
/// Wall-clock time for phase timers and progress lines.
#include <chrono>

namespace tessera::core {

/// Seconds since an arbitrary fixed origin (steady clock).
inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

/// Adds the time between construction and destruction to `total`.
class ScopedTimer {
 public:
  explicit ScopedTimer(double& total) : total_(total), start_(now_seconds()) {}
  ~ScopedTimer() { total_ += now_seconds() - start_; }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  double& total_;
  double start_;
};

}  // namespace tessera::core
