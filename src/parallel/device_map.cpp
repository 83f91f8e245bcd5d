#include "tessera/parallel/device_map.hpp"

#include "tessera/core/error.hpp"

namespace tessera::parallel {

int node_local_rank(const Communicator& comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm.native(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node);
  int rank = 0;
  MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  return rank;
}

int cuda_device_for(int local_rank, int visible, int pinned) {
  TESSERA_CHECK(visible > 0, "no CUDA device is visible to this rank");
  if (pinned >= 0) {
    TESSERA_CHECK(pinned < visible, "device: \"cuda:" << pinned << "\" but this rank sees "
                                                      << visible
                                                      << " CUDA device(s) (CUDA_VISIBLE_DEVICES "
                                                         "narrows them); use an index below "
                                                      << visible << " or \"cuda\"");
    return pinned;
  }
  return local_rank % visible;
}

}  // namespace tessera::parallel
