#pragma once
/// From the case's geometry (io::ShapeSpec) to a geometry::Shape.
#include <memory>
#include <string>

#include "tessera/geometry/shape.hpp"
#include "tessera/io/case.hpp"

namespace tessera::app {

/// Builds the case's shape tree; errors from the geometry (a self-intersecting polygon, an open
/// surface, an empty CSG result) name the case file and the shape's key or mesh file.
std::shared_ptr<const geometry::Shape> build_shape(const io::Case& c);

}  // namespace tessera::app
