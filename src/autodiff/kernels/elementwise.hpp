#pragma once
// The element-wise step of the forward engine, two implementations with one contract (see
// activate_streams): `*_generic` in ATen operations (any device), `*_cpu` as one fused loop.
// Notation: z_0 = pre_0 + bias is the value stream's pre-activation, z_k = pre_k for k >= 1;
// d[m] = sigma^(m)(z_0) and the primitives (activation_primitives of z_0) are [n, w].
// `pre`, `grad`, every d[m] and every primitive are contiguous.
#include <torch/types.h>

#include <utility>
#include <vector>

#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/nn/mlp.hpp"

namespace tessera::autodiff::taylor::detail {

/// The layout's shape as the kernels see it: `firsts` first-derivative streams, then one
/// stream per pair of first-stream positions, then one per Laplacian (its first-stream positions).
struct StreamShape {
  int64_t firsts = 0;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<std::vector<int64_t>> laplacians;
};

/// out [K, n, w] from pre [K, n, w] and d = {sigma, sigma', sigma''}.
void streams_forward_generic(const torch::Tensor& pre, const std::vector<torch::Tensor>& d,
                             const StreamShape& shape, torch::Tensor& out);
/// The same from the primitives: sigma and its derivatives are formed block by block in cache.
void streams_forward_cpu(nn::Activation activation, const torch::Tensor& pre,
                         const std::vector<torch::Tensor>& primitives, const StreamShape& shape,
                         torch::Tensor& out);

StreamShape shape_of(const StreamLayout& layout);
/// A shape as one list of integers, the form autograd nodes keep in saved_data:
/// [firsts, pairs, p0, q0, ..., laplacians, size0, a0, a1, ..., size1, ...].
std::vector<int64_t> encode(const StreamShape& shape);
StreamShape decode(const std::vector<int64_t>& code);

/// Each tensor's data as a raw pointer.
template <typename T>
std::vector<const T*> pointers(const std::vector<torch::Tensor>& tensors) {
  std::vector<const T*> p;
  for (const auto& t : tensors) p.push_back(t.template data_ptr<T>());
  return p;
}

/// d loss / d pre [K, n, w] from d loss / d out (`grad`), pre and d = {., sigma', sigma'',
/// sigma'''}.
void streams_backward_generic(const torch::Tensor& grad, const torch::Tensor& pre,
                              const std::vector<torch::Tensor>& d, const StreamShape& shape,
                              torch::Tensor& grad_pre);
void streams_backward_cpu(nn::Activation activation, const torch::Tensor& grad,
                          const torch::Tensor& pre, const std::vector<torch::Tensor>& primitives,
                          const StreamShape& shape, torch::Tensor& grad_pre);

/// The fused CPU loops on elements [0, count) of each stream, from raw pointers to the first
/// element: stream k of z starts at z + k * z_plane, of h (or g and gz) at k * h_plane (g_plane);
/// `prim` point at the primitives' first element. The value stream of z is never read (sigma
/// comes from the primitives); `write_value` false leaves the value stream of h unwritten, for
/// callers that read sigma from the first primitive instead (sigma_is_first_primitive).
void streams_forward_range(nn::Activation activation, const float* z, int64_t z_plane,
                           const std::vector<const float*>& prim, const StreamShape& shape,
                           int64_t count, float* h, int64_t h_plane, bool write_value);
void streams_forward_range(nn::Activation activation, const double* z, int64_t z_plane,
                           const std::vector<const double*>& prim, const StreamShape& shape,
                           int64_t count, double* h, int64_t h_plane, bool write_value);
void streams_backward_range(nn::Activation activation, const float* z, int64_t z_plane,
                            const float* g, const std::vector<const float*>& prim,
                            const StreamShape& shape, int64_t count, float* gz, int64_t g_plane);
void streams_backward_range(nn::Activation activation, const double* z, int64_t z_plane,
                            const double* g, const std::vector<const double*>& prim,
                            const StreamShape& shape, int64_t count, double* gz, int64_t g_plane);
/// streams_backward_range and streams_forward_range of the same pre-activations in one pass;
/// z, g, gz and h are four arrays that do not overlap (the loops are compiled as such).
void streams_backward_and_forward_range(nn::Activation activation, const float* z, int64_t z_plane,
                                        const float* g, const std::vector<const float*>& prim,
                                        const StreamShape& shape, int64_t count, float* gz,
                                        int64_t g_plane, float* h, int64_t h_plane,
                                        bool write_value);
void streams_backward_and_forward_range(nn::Activation activation, const double* z, int64_t z_plane,
                                        const double* g, const std::vector<const double*>& prim,
                                        const StreamShape& shape, int64_t count, double* gz,
                                        int64_t g_plane, double* h, int64_t h_plane,
                                        bool write_value);

/// The three loops above run one of two implementations with the same numbers (the same bits on
/// x86-64): each element's streams in registers (`registers_*`, elementwise_registers.cpp)
/// for the shapes most equations ask for (tanh, no second-derivative streams, up to three first
/// streams and at most one Laplacian whose axes are listed in ascending order), else one pass
/// per term over strips of elements (`strips_*`, any activation and shape). The `registers_*`
/// return false, doing nothing, for a case they do not take.
bool registers_forward_range(nn::Activation activation, const float* z, int64_t z_plane,
                             const std::vector<const float*>& prim, const StreamShape& shape,
                             int64_t count, float* h, int64_t h_plane, bool write_value);
bool registers_forward_range(nn::Activation activation, const double* z, int64_t z_plane,
                             const std::vector<const double*>& prim, const StreamShape& shape,
                             int64_t count, double* h, int64_t h_plane, bool write_value);
bool registers_backward_range(nn::Activation activation, const float* z, int64_t z_plane,
                              const float* g, const std::vector<const float*>& prim,
                              const StreamShape& shape, int64_t count, float* gz, int64_t g_plane);
bool registers_backward_range(nn::Activation activation, const double* z, int64_t z_plane,
                              const double* g, const std::vector<const double*>& prim,
                              const StreamShape& shape, int64_t count, double* gz, int64_t g_plane);
bool registers_backward_and_forward_range(nn::Activation activation, const float* z,
                                          int64_t z_plane, const float* g,
                                          const std::vector<const float*>& prim,
                                          const StreamShape& shape, int64_t count, float* gz,
                                          int64_t g_plane, float* h, int64_t h_plane,
                                          bool write_value);
bool registers_backward_and_forward_range(nn::Activation activation, const double* z,
                                          int64_t z_plane, const double* g,
                                          const std::vector<const double*>& prim,
                                          const StreamShape& shape, int64_t count, double* gz,
                                          int64_t g_plane, double* h, int64_t h_plane,
                                          bool write_value);

void strips_forward_range(nn::Activation activation, const float* z, int64_t z_plane,
                          const std::vector<const float*>& prim, const StreamShape& shape,
                          int64_t count, float* h, int64_t h_plane, bool write_value);
void strips_forward_range(nn::Activation activation, const double* z, int64_t z_plane,
                          const std::vector<const double*>& prim, const StreamShape& shape,
                          int64_t count, double* h, int64_t h_plane, bool write_value);
void strips_backward_range(nn::Activation activation, const float* z, int64_t z_plane,
                           const float* g, const std::vector<const float*>& prim,
                           const StreamShape& shape, int64_t count, float* gz, int64_t g_plane);
void strips_backward_range(nn::Activation activation, const double* z, int64_t z_plane,
                           const double* g, const std::vector<const double*>& prim,
                           const StreamShape& shape, int64_t count, double* gz, int64_t g_plane);
void strips_backward_and_forward_range(nn::Activation activation, const float* z, int64_t z_plane,
                                       const float* g, const std::vector<const float*>& prim,
                                       const StreamShape& shape, int64_t count, float* gz,
                                       int64_t g_plane, float* h, int64_t h_plane,
                                       bool write_value);
void strips_backward_and_forward_range(nn::Activation activation, const double* z, int64_t z_plane,
                                       const double* g, const std::vector<const double*>& prim,
                                       const StreamShape& shape, int64_t count, double* gz,
                                       int64_t g_plane, double* h, int64_t h_plane,
                                       bool write_value);

/// Whether the activation's first primitive is sigma itself (tanh, sin), so the forward's
/// value stream can be read from it instead of a copy.
bool sigma_is_first_primitive(nn::Activation activation);

/// Whether the fused CPU loop handles tensors like `t` (CPU, float32 or float64).
bool cpu_kernel_applies(const torch::Tensor& t);

}  // namespace tessera::autodiff::taylor::detail
