#include "tessera/geometry/shape.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"

namespace tessera::geometry {

double Shape::boundary_tolerance() const {
  const Box box = bounding_box();
  double extent = 0.0;
  for (int d = 0; d < box.dims(); ++d) extent = std::max(extent, box.extent(d));
  return 1e-10 * std::max(1.0, extent);
}

PolygonSet Shape::polygons(double) const {
  TESSERA_FAIL("a " << dims() << "-D shape has no polygon outline (only 2-D shapes do)");
}

TriangleSurface Shape::surface(double) const {
  TESSERA_FAIL("a " << dims() << "-D shape has no triangle surface (only 3-D shapes do)");
}

}  // namespace tessera::geometry
