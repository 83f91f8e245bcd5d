#include "tessera/core/memory_usage.hpp"

#include <fstream>
#include <string>

namespace tessera::core {
namespace {

double at_reset = 0.0;

/// A "Vm...:   1234 kB" line of /proc/self/status, in bytes (0 if absent).
double status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size())) * 1024.0;
  return 0.0;
}

}  // namespace

bool reset_peak_memory() {
  // "5" resets the peak resident set size (VmHWM) to the current one (Linux 4.0 and later).
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  at_reset = status_bytes("VmRSS:");
  return static_cast<bool>(clear);
}

double peak_memory_bytes() { return status_bytes("VmHWM:"); }

double memory_at_reset_bytes() { return at_reset; }

}  // namespace tessera::core
