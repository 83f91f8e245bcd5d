#include "tessera/geometry/rejection.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/shape.hpp"

namespace tessera::geometry {

torch::Tensor collect_accepted(std::int64_t n,
                               const std::function<torch::Tensor(std::int64_t)>& draw,
                               const std::string& what) {
  constexpr std::int64_t give_up_after = std::int64_t{1} << 24;
  constexpr std::int64_t largest_round = std::int64_t{1} << 21;
  std::vector<torch::Tensor> kept;
  std::int64_t have = 0, drawn = 0;
  double acceptance = 0.5;
  while (true) {
    const double wanted = static_cast<double>(std::max<std::int64_t>(n - have, 1)) / acceptance;
    const auto m = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(std::ceil(1.25 * wanted)) + 64, 64, largest_round);
    auto rows = draw(m);
    drawn += m;
    have += rows.size(0);
    kept.push_back(std::move(rows));
    if (have >= n) break;
    TESSERA_CHECK(have > 0 || drawn < give_up_after, what << ": no point found in " << drawn
                                                          << " tries; the set is empty or has no "
                                                          << "measure (check the geometry)");
    acceptance = std::max(static_cast<double>(have) / static_cast<double>(drawn), 1e-6);
  }
  return torch::cat(kept, 0).narrow(0, 0, n).contiguous();
}

torch::Tensor sample_in_bounding_box(const Shape& shape, std::int64_t n, int extra_dims,
                                     SamplerKind kind, core::Rng& rng, const std::string& what) {
  TESSERA_CHECK(extra_dims >= 0, "sample_in_bounding_box: extra_dims < 0");
  const Box box = shape.bounding_box();
  const int dims = shape.dims();
  return collect_accepted(
      n,
      [&](std::int64_t m) {
        auto unit = unit_samples(kind, m, dims + extra_dims, rng);
        for (int d = 0; d < dims; ++d) unit.select(1, d).mul_(box.extent(d)).add_(box.lo[d]);
        return unit.index({shape.contains(unit.narrow(1, 0, dims))});
      },
      what);
}

}  // namespace tessera::geometry
