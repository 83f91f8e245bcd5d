#include "tessera/geometry/box.hpp"

#include <cmath>

#include "tessera/core/error.hpp"

namespace tessera::geometry {

double Box::measure() const {
  double m = 1.0;
  for (int d = 0; d < dims(); ++d) m *= extent(d);
  return m;
}

std::vector<double> Box::center() const {
  std::vector<double> c(lo.size());
  for (std::size_t d = 0; d < lo.size(); ++d) c[d] = 0.5 * (lo[d] + hi[d]);
  return c;
}

void validate_box(const Box& box, const std::string& key, bool spatial) {
  TESSERA_CHECK(box.lo.size() == box.hi.size(), key << ": box has " << box.lo.size()
                                                    << " lower and " << box.hi.size()
                                                    << " upper bounds");
  if (spatial) {
    TESSERA_CHECK(box.dims() >= 1 && box.dims() <= 8,
                  key << ": a box has 1 to 8 dimensions, got " << box.dims());
  }
  for (int d = 0; d < box.dims(); ++d) {
    TESSERA_CHECK(std::isfinite(box.lo[d]) && std::isfinite(box.hi[d]),
                  key << ": bounds of dimension " << d << " must be finite");
    TESSERA_CHECK(box.lo[d] < box.hi[d], key << ": dimension " << d << " needs lower < upper, got ["
                                             << box.lo[d] << ", " << box.hi[d] << "]");
  }
}

}  // namespace tessera::geometry
