#include "output_space.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tessera/io/write_error.hpp"

namespace tessera::io::detail {

namespace {

constexpr uint64_t kib = 1024;

/// Truncating a file to its own size still frees the blocks claimed beyond its end.
void free_claim(int descriptor) {
  if (::ftruncate(descriptor, 0) != 0) {
    // Nothing to do: the room stays claimed until the file is deleted or rewritten.
  }
}

bool fault_requested() {
  const char* fault = std::getenv("TESSERA_FAULT");
  return fault && std::string(fault) == "output_write_fails";
}

std::string readable_size(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) value /= 1024, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace

int claim_blocks(int descriptor, uint64_t bytes) {
  if (bytes == 0) return 0;
  if (::fallocate(descriptor, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(bytes)) == 0) return 0;
  return errno;
}

OutputSizes output_sizes(const GridLayout& layout, std::size_t fields, bool with_subdomain,
                         std::size_t parameters, uint64_t xmf_bytes) {
  const auto points = static_cast<uint64_t>(layout.size());
  uint64_t axis_values = 0;
  for (const auto& axis : layout.axes) axis_values += axis.size();
  OutputSizes sizes;
  sizes.values = points * (8 * fields + (with_subdomain ? 4 : 0)) + 8 * axis_values;
  uint64_t datasets = fields + (with_subdomain ? 1 : 0) + layout.axes.size() + parameters;
  if (layout.mesh) {
    sizes.values += 8 * (layout.mesh->points.size() + layout.mesh->cells.size());
    datasets += 2;
  } else if (layout.spatial_dims() <= 1) {
    sizes.values += 32 * layout.axes.front().size();  // the line's points and segments
    datasets += 2;
  }
  // About twice the metadata measured per object (docs/benchmarks.md, "Room for the output
  // file"): HDF5 writes it in blocks of 2 KiB between the values, so after a failed write,
  // with the values gone, a block may need a disk block of its own.
  sizes.metadata = 8 * kib + kib * datasets;
  // The values share disk blocks with the metadata between them, which is written only on
  // the close: the disk blocks they touch first cover the measured metadata too.
  sizes.values += sizes.metadata / 2 + 8 * kib;
  if (layout.has_time && layout.spatial_dims() >= 1) {
    const uint64_t steps = layout.axes.back().size();
    const uint64_t views = steps * (fields + (with_subdomain ? 1 : 0));
    sizes.view_metadata = 16 * kib + 2 * kib * steps + kib / 2 * views;
  }
  sizes.xmf = xmf_bytes;
  return sizes;
}

OutputSpace::OutputSpace(const parallel::Communicator& comm, std::string reserve_path,
                         const std::string& output, const OutputSizes& sizes) {
  std::string failure;
  if (comm.rank() == 0) {
    path_ = std::move(reserve_path);
    failure = claim_all(sizes.total(), output);
  }
  if (comm.any(!failure.empty())) {
    release();
    throw WriteError(comm.rank() == 0 ? failure
                                      : "not enough space for " + output + " (see rank 0)");
  }
  keep(sizes.metadata + sizes.view_metadata + sizes.xmf);
  if (fault_requested()) start_fault();
}

OutputSpace::~OutputSpace() { release(); }

std::string OutputSpace::claim_all(uint64_t bytes, const std::string& output) {
  descriptor_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (descriptor_ < 0) return "cannot create " + path_ + ": " + std::strerror(errno);
  const int error = claim_blocks(descriptor_, bytes);
  if (error == 0) return "";
  if (error == EOPNOTSUPP || error == ENOSYS) {
    // Nothing to claim with: write as if there were room, as before there was a reserve.
    ::close(descriptor_);
    descriptor_ = -1;
    return "";
  }
  return "not enough space for " + output + ": it needs about " + readable_size(bytes) + " (" +
         std::strerror(error) + ")";
}

void OutputSpace::keep(uint64_t bytes) {
  lift_fault();
  if (descriptor_ < 0) return;
  free_claim(descriptor_);
  if (claim_blocks(descriptor_, bytes) != 0) {
    // Taken by someone else in the moment between: the close goes ahead without the reserve.
  }
}

void OutputSpace::release() {
  lift_fault();
  if (descriptor_ >= 0) ::close(descriptor_);
  descriptor_ = -1;
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

void OutputSpace::hand_over() {
  lift_fault();
  if (descriptor_ >= 0) {
    free_claim(descriptor_);
    ::close(descriptor_);
  }
  descriptor_ = -1;
  path_.clear();
}

void OutputSpace::start_fault() {
  // Past the limit a write fails with EFBIG; the signal would otherwise end the process.
  sigxfsz_before_fault_ = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limit{};
  ::getrlimit(RLIMIT_FSIZE, &limit);
  limit_before_fault_ = limit.rlim_cur;
  limit.rlim_cur = 0;
  fault_ = ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
}

void OutputSpace::lift_fault() {
  if (!fault_) return;
  rlimit limit{};
  ::getrlimit(RLIMIT_FSIZE, &limit);
  limit.rlim_cur = limit_before_fault_;
  ::setrlimit(RLIMIT_FSIZE, &limit);
  std::signal(SIGXFSZ, sigxfsz_before_fault_);
  fault_ = false;
}

}  // namespace tessera::io::detail
