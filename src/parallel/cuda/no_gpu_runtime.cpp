// Builds without the CUDA toolkit: no GPU facts beyond the device index.
#include "tessera/parallel/device_map.hpp"

namespace tessera::parallel {

std::string gpu_name(int index) { return "cuda:" + std::to_string(index); }

std::optional<double> free_gpu_memory(int) { return std::nullopt; }

}  // namespace tessera::parallel
