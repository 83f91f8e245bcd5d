#pragma once
/// Private to io: the disk space an output file needs, claimed before HDF5 writes anything.
///
/// HDF5 keeps a file's metadata in memory and writes it when the file is closed. When that write
/// fails (a full disk), H5Fclose fails half-way: the file's identifier stays registered but its
/// state is freed, and HDF5's own shutdown, which MPI_Finalize runs, crashes on it
/// (docs/output-format.md, "When the disk is full"). So the writer
/// 1. claims the room the whole output needs before creating the file, and fails at once,
///    with HDF5 not involved, when there is none;
/// 2. keeps room for the metadata while the values are written, in a reserve file of rank 0's;
/// 3. gives that room back just before each close, so the close can write the metadata even
///    when something else filled the disk in the meantime.
#include <cstdint>
#include <string>

#include "tessera/io/grid_output.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::io::detail {

/// Claims `bytes` of disk blocks for the open file `descriptor` without changing its size
/// (fallocate, FALLOC_FL_KEEP_SIZE): 0, or the errno of the refusal.
int claim_blocks(int descriptor, uint64_t bytes);

/// Bytes an output file takes on disk, by the phase that writes them (estimates on the safe side).
struct OutputSizes {
  uint64_t values = 0;         ///< the disk blocks the values touch (parallel file)
  uint64_t metadata = 0;       ///< HDF5's metadata of the parallel file, written on its close
  uint64_t view_metadata = 0;  ///< the /steps views, written on the close of their serial phase
  uint64_t xmf = 0;            ///< the XDMF text
  uint64_t total() const { return values + metadata + view_metadata + xmf; }
};

/// The sizes of the file of `layout` with `fields` float64 fields (plus the int32 subdomain
/// field when `with_subdomain`) and `parameters` scalars, and of its XDMF text of `xmf_bytes`.
OutputSizes output_sizes(const GridLayout& layout, std::size_t fields, bool with_subdomain,
                         std::size_t parameters, uint64_t xmf_bytes);

/// The room of one output, held by rank 0 in `reserve_path` (allocated blocks of a file of size
/// 0: the .xmf.partial, whose own write at the end takes the room over). A file system without
/// fallocate (some network file systems) holds nothing and checks nothing: the write goes ahead
/// as if the reserve were not there.
///
/// TESSERA_FAULT=output_write_fails (Tessera's tests): once the room is claimed, the disk is
/// "full" on every rank, as if another program had taken the rest: no file may grow (a file size
/// limit, so HDF5's writes really fail, with EFBIG) until the reserve gives room back.
class OutputSpace {
 public:
  /// Claims `sizes.total()`, then keeps the room of the later phases (metadata, views, XDMF).
  /// Collective over comm. Throws WriteError on every rank, naming `output` (the file the user
  /// will look for) and the cause, when rank 0 cannot claim it.
  OutputSpace(const parallel::Communicator& comm, std::string reserve_path,
              const std::string& output, const OutputSizes& sizes);
  ~OutputSpace();
  OutputSpace(const OutputSpace&) = delete;
  OutputSpace& operator=(const OutputSpace&) = delete;

  /// Keeps `bytes` of the reserve and gives the rest back (local: rank 0's file, every rank's
  /// injected fault). Never fails: room that cannot be claimed again is simply not held.
  void keep(uint64_t bytes);
  /// Gives all the room back and deletes the reserve file (local).
  void release();
  /// Gives all the room back but leaves the (empty) reserve file to its next writer.
  void hand_over();

 private:
  /// Rank 0: creates the reserve file and claims `bytes`; "" or why it could not.
  std::string claim_all(uint64_t bytes, const std::string& output);
  void start_fault();
  void lift_fault();

  std::string path_;     ///< rank 0's reserve file; "" elsewhere and once released
  int descriptor_ = -1;  ///< open while it holds room
  bool fault_ = false;
  uint64_t limit_before_fault_ = 0;
  void (*sigxfsz_before_fault_)(int) = nullptr;
};

}  // namespace tessera::io::detail
