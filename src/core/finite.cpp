#include "tessera/core/finite.hpp"

#include <cmath>

namespace tessera::core {
namespace {

template <typename T>
bool all_finite(const T* data, int64_t count) {
  bool finite = true;
  for (int64_t i = 0; i < count; ++i) finite &= std::isfinite(data[i]);
  return finite;
}

}  // namespace

bool all_finite(const torch::Tensor& t) {
  if (t.device().is_cpu() && t.is_contiguous()) {
    if (t.scalar_type() == torch::kFloat32) return all_finite(t.data_ptr<float>(), t.numel());
    if (t.scalar_type() == torch::kFloat64) return all_finite(t.data_ptr<double>(), t.numel());
  }
  return torch::isfinite(t).all().item<bool>();
}

}  // namespace tessera::core
