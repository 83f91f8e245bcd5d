// The NCCL backend, compiled only when CMake found CUDA and NCCL (TESSERA_HAVE_NCCL).
#include "tessera/parallel/nccl_all_reduce.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/gradient_all_reduce.hpp"

namespace tessera::parallel {
namespace {

void check_cuda(cudaError_t status, const char* what) {
  TESSERA_CHECK(status == cudaSuccess,
                "CUDA " << what << " failed: " << cudaGetErrorString(status));
}

void check_nccl(ncclResult_t status, const char* what) {
  TESSERA_CHECK(status == ncclSuccess,
                "NCCL " << what << " failed: " << ncclGetErrorString(status));
}

}  // namespace

struct NcclAllReduce::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
};

NcclAllReduce::NcclAllReduce(const Communicator& comm, int device) : state_(new State) {
  const int devices = cuda_device_count();
  TESSERA_CHECK(devices > 0, "the NCCL backend needs a CUDA device, and this rank sees none");
  state_->device = device;
  check_cuda(cudaSetDevice(state_->device), "cudaSetDevice");
  // Bootstrap through MPI: rank 0 creates the unique id, every rank receives it.
  ncclUniqueId id;
  if (comm.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm.native());
  check_nccl(ncclCommInitRank(&state_->comm, comm.size(), id, comm.rank()), "ncclCommInitRank");
  check_cuda(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
}

NcclAllReduce::~NcclAllReduce() {
  if (state_->comm) ncclCommDestroy(state_->comm);
  if (state_->stream) cudaStreamDestroy(state_->stream);
  delete state_;
}

void NcclAllReduce::sum_in_place(torch::Tensor& bucket) {
  TESSERA_ASSERT(bucket.is_cuda() && bucket.is_contiguous(), "NCCL needs a contiguous CUDA tensor");
  const ncclDataType_t type = bucket.scalar_type() == torch::kFloat32 ? ncclFloat32 : ncclFloat64;
  TESSERA_ASSERT(bucket.scalar_type() == torch::kFloat32 || bucket.scalar_type() == torch::kFloat64,
                 "gradient all-reduce supports float32 and float64 only");
  check_cuda(cudaSetDevice(static_cast<int>(bucket.device().index())), "cudaSetDevice");
  // LibTorch queued the gradients on its own stream; NCCL runs on ours, so wait for the device.
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check_nccl(
      ncclAllReduce(bucket.data_ptr(), bucket.data_ptr(), static_cast<size_t>(bucket.numel()), type,
                    ncclSum, state_->comm, state_->stream),
      "ncclAllReduce");
  check_cuda(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
}

int cuda_device_count() {
  int count = 0;
  // No usable GPU (cudaGetDeviceCount fails, e.g. with error 35, cudaErrorInsufficientDriver,
  // where no GPU driver is installed) means zero devices, not an error.
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

std::string cuda_device_bus_id(int device) {
  char id[32] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof id, device) != cudaSuccess) return {};
  return id;
}

bool have_nccl() { return true; }

}  // namespace tessera::parallel
