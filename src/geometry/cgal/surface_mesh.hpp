#pragma once
// Private to src/geometry/cgal/: the CGAL surface type the surface_*.cpp files share, and the
// one conversion from Tessera's plain TriangleSurface to it.
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Surface_mesh.h>

#include <string>

#include "tessera/geometry/polygonal.hpp"

namespace tessera::geometry::cgal {

using Kernel = CGAL::Exact_predicates_inexact_constructions_kernel;
using CgalPoint = Kernel::Point_3;
using Mesh = CGAL::Surface_mesh<CgalPoint>;

/// A surface already known to be a manifold (checked, or made by CGAL) as a CGAL mesh; `who`
/// names the caller in the internal error raised when it is not.
Mesh to_mesh(const TriangleSurface& surface, const std::string& who);

}  // namespace tessera::geometry::cgal
