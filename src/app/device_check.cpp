#include "tessera/app/device_check.hpp"

#include <sstream>

#include "tessera/app/memory_estimate.hpp"
#include "tessera/core/error.hpp"
#include "tessera/parallel/device_map.hpp"

namespace tessera::app {

namespace {

// The memory estimate against this rank's share of its GPU; "" when it fits or is unknown.
std::string gpu_memory_refusal(const Setup& setup, int ranks, int sharing) {
  const torch::Device device = setup.problem.device;
  if (!device.is_cuda()) return "";
  const auto free = parallel::free_gpu_memory(device.index());
  if (!free) return "";
  std::ostringstream source;
  source << "GPU " << static_cast<int>(device.index()) << "'s free memory"
         << (sharing > 1 ? " shared by the " + std::to_string(sharing) + " ranks on it" : "");
  try {
    check_memory_estimate(setup.input, ranks, gpu_memory_limit_bytes(*free, sharing),
                          setup.problem.domain->shape().bounding_box(), source.str());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

void check_devices(const parallel::Communicator& comm, const Setup& setup, Console& console) {
  const torch::Device device = setup.problem.device;
  const auto ranks = parallel::gather_devices(
      comm, parallel::this_rank_device(device.is_cuda() ? device.index() : -1));
  const std::string mixed = parallel::device_kind_disagreement(ranks);
  TESSERA_CHECK(mixed.empty(), setup.input.file << ": device: " << mixed);
  const std::string shared = parallel::shared_gpu_warning(ranks);
  if (!shared.empty() && comm.rank() == 0) console.warning(shared);
  const std::string refusal =
      gpu_memory_refusal(setup, comm.size(), parallel::ranks_on_same_gpu(ranks, comm.rank()));
  // Every rank learns that some rank cannot fit, so none waits for it in a collective.
  const std::vector<std::string> refusals = comm.gather_to_root(refusal);
  std::string first;
  for (const auto& text : refusals)
    if (first.empty()) first = text;
  first = comm.broadcast_from_root(first);
  TESSERA_CHECK(first.empty(), first);
}

}  // namespace tessera::app
