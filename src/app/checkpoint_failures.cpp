#include "tessera/app/checkpoint_failures.hpp"

namespace tessera::app {

std::string CheckpointFailures::record(int64_t iteration, const std::string& failure) {
  if (failure.empty()) {
    latest_failed_ = -1;
    return "";
  }
  latest_failed_ = last_ = iteration;
  if (count_++ > 0) return "";
  first_ = iteration;
  return failure + "; later failures are counted and reported at the end of the run";
}

std::string CheckpointFailures::summary() const {
  if (count_ < 2) return "";
  return "checkpoint writes failed " + std::to_string(count_) +
         " times in this run, from iteration " + std::to_string(first_) + " to " +
         std::to_string(last_) +
         " (the first failure above says why); a restart uses the newest complete checkpoint";
}

}  // namespace tessera::app
