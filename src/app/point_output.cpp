#include "tessera/app/point_output.hpp"

#include "tessera/io/write_error.hpp"

namespace tessera::app {

io::PointValues named_columns(const torch::Tensor& values, const std::vector<std::string>& names) {
  io::PointValues out;
  out.names = names;
  const auto columns = values.t().contiguous();
  for (int64_t k = 0; k < columns.size(0); ++k) {
    const double* data = columns[k].data_ptr<double>();
    out.columns.emplace_back(data, data + columns.size(1));
  }
  return out;
}

void write_on_root(const parallel::Communicator& comm, const std::function<void()>& write) {
  std::string failure;
  if (comm.rank() == 0) try {
      write();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  if (comm.any(!failure.empty()))
    throw io::WriteError(failure.empty() ? "rank 0 could not write its file" : failure);
}

}  // namespace tessera::app
