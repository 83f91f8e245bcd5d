#include "tessera/core/host_reads.hpp"

#include <array>
#include <atomic>

#include "tessera/core/finite.hpp"

namespace tessera::core {
namespace {

std::array<std::atomic<int64_t>, 2> reads{};

void count(HostRead kind) { reads[static_cast<std::size_t>(kind)].fetch_add(1); }

}  // namespace

double read_double(const torch::Tensor& t) {
  count(HostRead::value);
  return t.item<double>();
}

int64_t read_integer(const torch::Tensor& t) {
  count(HostRead::value);
  return t.item<int64_t>();
}

bool read_bool(const torch::Tensor& t) {
  count(HostRead::value);
  return t.item<bool>();
}

torch::Tensor read_to_host(const torch::Tensor& t, torch::Dtype dtype, HostRead kind) {
  count(kind);
  return t.to(torch::kCPU, dtype).contiguous();
}

bool all_finite(const torch::Tensor& t) {
  count(HostRead::value);
  if (t.device().is_cpu()) return finite_on_cpu(t);
  return torch::isfinite(t).all().item<bool>();
}

int64_t host_reads(HostRead kind) { return reads[static_cast<std::size_t>(kind)].load(); }

}  // namespace tessera::core
