#include "tessera/core/finite.hpp"

#include <cmath>

#include "tessera/core/error.hpp"

namespace tessera::core {
namespace {

template <typename T>
bool finite_elements(const T* data, int64_t count) {
  bool finite = true;
  for (int64_t i = 0; i < count; ++i) finite &= std::isfinite(data[i]);
  return finite;
}

}  // namespace

bool finite_on_cpu(const torch::Tensor& t) {
  TESSERA_ASSERT(t.device().is_cpu(), "finite_on_cpu: the tensor is on " << t.device());
  if (t.scalar_type() == torch::kFloat32) {
    const auto values = t.contiguous();
    return finite_elements(values.data_ptr<float>(), values.numel());
  }
  const auto values = t.to(torch::kFloat64).contiguous();
  return finite_elements(values.data_ptr<double>(), values.numel());
}

}  // namespace tessera::core
