// GPU facts from the CUDA runtime, built where CMake finds the CUDA toolkit.
#include <cuda_runtime_api.h>

#include "tessera/parallel/device_map.hpp"

namespace tessera::parallel {

std::string gpu_name(int index) {
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, index) == cudaSuccess) return bus;
  return "cuda:" + std::to_string(index);
}

std::optional<double> free_gpu_memory(int index) {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess || cudaSetDevice(index) != cudaSuccess)
    return std::nullopt;
  size_t free = 0, total = 0;
  const bool known = cudaMemGetInfo(&free, &total) == cudaSuccess;
  cudaSetDevice(current);
  if (!known) return std::nullopt;
  return static_cast<double>(free);
}

}  // namespace tessera::parallel
