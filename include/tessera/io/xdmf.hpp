#pragma once
/// XDMF 3 descriptions of Tessera's grid and mesh output, for ParaView (its default Xdmf3 reader).
#include <string>
#include <vector>

#include "tessera/io/grid_output.hpp"

namespace tessera::io {

/// The XDMF 3 text describing a grid-output file written by write_grid_output.
///   `h5_file_name`  the .h5 as referenced from the .xmf: a bare file name (same folder)
///   `fields`        float64 fields under /fields (not "subdomain")
///   `with_subdomain` whether /fields/subdomain (int32) exists
/// Space of 2 or 3 dimensions: 2DRectMesh/3DRectMesh with VXVY/VXVYVZ geometry from /grid.
/// Space of 1 dimension: a Polyline over /xdmf/points with /xdmf/segments, so ParaView shows a
/// line. Mesh layout: Triangle (2-D) or Tetrahedron (3-D) topology over /mesh/cells (64-bit Int)
/// with XY or XYZ geometry from /mesh/points; node-centred attributes of [n_points] values.
/// Space-time: a Temporal collection, one grid per time value, whose attributes read
/// /steps/<k>/<field> (ParaView's Xdmf3 reader ignores HyperSlab items).
/// Layout with time only (no spatial axis): time is shown as the line coordinate, no collection.
std::string xdmf_text(const GridLayout& layout, const std::vector<std::string>& fields,
                      bool with_subdomain, const std::string& h5_file_name,
                      const std::string& grid_name);

}  // namespace tessera::io
