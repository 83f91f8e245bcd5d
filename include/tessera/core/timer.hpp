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

/// Adds the time between construction and destruction to `total`, less what `nested` (the
/// total of another phase, timed inside this one) grew by meanwhile, so that the two phases
/// stay disjoint: a gradient sum timed as synchronisation inside a training step is not also
/// counted as computation.
class ExclusiveTimer {
 public:
  ExclusiveTimer(double& total, const double& nested)
      : total_(total), nested_(nested), start_(now_seconds()), nested_start_(nested) {}
  ~ExclusiveTimer() { total_ += (now_seconds() - start_) - (nested_ - nested_start_); }
  ExclusiveTimer(const ExclusiveTimer&) = delete;
  ExclusiveTimer& operator=(const ExclusiveTimer&) = delete;

 private:
  double& total_;
  const double& nested_;
  double start_, nested_start_;
};

}  // namespace tessera::core
