// The forward engine's element-wise step as one fused pass on the CPU. The same arithmetic in
// ATen operations reads and writes every stream several times over (one kernel per operation);
// here each strip of 64 elements is read once while it sits in cache: sigma and its
// derivatives are formed from the primitives into strip-local buffers, then every stream is
// updated by a plain vectorisable loop.
#include "elementwise.hpp"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>

#include "tessera/core/torch_pch.hpp"
#include "vector_clones.hpp"

namespace tessera::autodiff::taylor::detail {

namespace {

// Elements per strip: sigma's derivatives for a strip stay in L1 next to the streams, and full
// strips have a length known at compile time, so their loops unroll with no remainder. 64 was
// the fastest length measured on the seed network, and an AVX-512 version of these loops was no
// faster (docs/benchmarks.md, "Element-wise strip length").
constexpr int64_t strip = 64;

// Elements per task of LibTorch's intra-op threads.
constexpr int64_t grain = 1024;

// sigma' .. sigma''' of a strip; sigma itself goes where the caller says (see block_derivatives).
template <typename T>
struct BlockDerivatives {
  T d1[strip], d2[strip], d3[strip];
};

// sigma .. sigma''' on elements [b, b + m) from the primitives (see activation_primitives):
// sigma into `value` (the forward's output stream directly: copying it there from a block
// buffer was a large part of the forward step; null: not wanted), the derivatives into d.
template <typename T>
TESSERA_INLINE void block_derivatives(nn::Activation activation,
                                      const std::vector<const T*>& primitives, int64_t b, int64_t m,
                                      T* __restrict value, BlockDerivatives<T>& d) {
  switch (activation) {
    case nn::Activation::tanh: {
      const T* __restrict t = primitives[0] + b;
      if (value)
        for (int64_t i = 0; i < m; ++i) value[i] = t[i];
      for (int64_t i = 0; i < m; ++i) {
        const T x = t[i], u = 1 - x * x;
        d.d1[i] = u;
        d.d2[i] = -2 * x * u;
        d.d3[i] = u * (6 * x * x - 2);
      }
      return;
    }
    case nn::Activation::sin: {
      const T* __restrict s = primitives[0] + b;
      const T* __restrict c = primitives[1] + b;
      if (value)
        for (int64_t i = 0; i < m; ++i) value[i] = s[i];
      for (int64_t i = 0; i < m; ++i) {
        d.d1[i] = c[i];
        d.d2[i] = -s[i];
        d.d3[i] = -c[i];
      }
      return;
    }
    case nn::Activation::gelu: {
      const T* __restrict z = primitives[0] + b;
      const T* __restrict cdf = primitives[1] + b;
      const T* __restrict pdf = primitives[2] + b;
      for (int64_t i = 0; i < m; ++i) {
        const T x = z[i], zz = x * x;
        if (value) value[i] = x * cdf[i];
        d.d1[i] = cdf[i] + x * pdf[i];
        d.d2[i] = pdf[i] * (2 - zz);
        d.d3[i] = x * pdf[i] * (zz - 4);
      }
      return;
    }
    case nn::Activation::silu: {
      const T* __restrict z = primitives[0] + b;
      const T* __restrict sig = primitives[1] + b;
      for (int64_t i = 0; i < m; ++i) {
        const T x = z[i], s = sig[i], ds = s * (1 - s), skew = 1 - 2 * s;
        if (value) value[i] = x * s;
        d.d1[i] = s + x * ds;
        d.d2[i] = ds * (2 + x * skew);
        d.d3[i] = ds * (skew * (3 + x * skew) - 2 * x * ds);
      }
      return;
    }
  }
}

template <typename T>
TESSERA_INLINE void add_product3(T* __restrict out, const T* __restrict a, const T* __restrict b,
                                 const T* __restrict c, T factor, int64_t m) {
  for (int64_t i = 0; i < m; ++i) out[i] += factor * a[i] * b[i] * c[i];
}

// A strip's output streams k >= 1 from sigma's derivatives d.
template <typename T>
TESSERA_INLINE void forward_streams(const BlockDerivatives<T>& d, const T* z, int64_t z_plane,
                                    const StreamShape& shape, int64_t b, int64_t m, T* h,
                                    int64_t h_plane) {
  const int64_t firsts = shape.firsts;
  for (int64_t k = 1; k <= firsts; ++k) {
    const T* __restrict zk = z + k * z_plane + b;
    T* __restrict hk = h + k * h_plane + b;
    for (int64_t i = 0; i < m; ++i) hk[i] = d.d1[i] * zk[i];
  }
  for (std::size_t j = 0; j < shape.pairs.size(); ++j) {
    const int64_t stream = 1 + firsts + static_cast<int64_t>(j);
    const T* __restrict zp = z + (1 + shape.pairs[j].first) * z_plane + b;
    const T* __restrict zq = z + (1 + shape.pairs[j].second) * z_plane + b;
    const T* __restrict zs = z + stream * z_plane + b;
    T* __restrict hs = h + stream * h_plane + b;
    for (int64_t i = 0; i < m; ++i) hs[i] = d.d2[i] * zp[i] * zq[i] + d.d1[i] * zs[i];
  }
  for (std::size_t j = 0; j < shape.laplacians.size(); ++j) {
    const int64_t stream = 1 + firsts + static_cast<int64_t>(shape.pairs.size() + j);
    const T* __restrict zs = z + stream * z_plane + b;
    T* __restrict hs = h + stream * h_plane + b;
    for (int64_t i = 0; i < m; ++i) hs[i] = d.d1[i] * zs[i];
    for (int64_t a : shape.laplacians[j]) {
      const T* __restrict za = z + (1 + a) * z_plane + b;
      for (int64_t i = 0; i < m; ++i) hs[i] += d.d2[i] * za[i] * za[i];
    }
  }
}

// The backward of a stream's s'(z) z_k term (a first derivative's whole output, part of a
// Laplacian's): its own gradient g s', and g s'' z_k into the value stream's gradient gz0.
template <typename T>
TESSERA_INLINE void backward_linear_term(const T* __restrict g, const T* __restrict z_k,
                                         const BlockDerivatives<T>& d, int64_t m, T* __restrict out,
                                         T* __restrict gz0) {
  for (int64_t i = 0; i < m; ++i) {
    out[i] = g[i] * d.d1[i];
    gz0[i] += g[i] * d.d2[i] * z_k[i];
  }
}

// A strip's gradient at the pre-activations, every stream, from sigma's derivatives d.
template <typename T>
TESSERA_INLINE void backward_streams(const BlockDerivatives<T>& d, const T* z, int64_t z_plane,
                                     const T* g, const StreamShape& shape, int64_t b, int64_t m,
                                     T* gz, int64_t g_plane) {
  const int64_t firsts = shape.firsts;
  const T* __restrict g0 = g + b;
  T* __restrict gz0 = gz + b;
  for (int64_t i = 0; i < m; ++i) gz0[i] = g0[i] * d.d1[i];
  for (int64_t k = 1; k <= firsts; ++k)
    backward_linear_term(g + k * g_plane + b, z + k * z_plane + b, d, m, gz + k * g_plane + b, gz0);
  for (std::size_t j = 0; j < shape.pairs.size(); ++j) {
    const auto [p, q] = shape.pairs[j];
    const int64_t stream = 1 + firsts + static_cast<int64_t>(j);
    const T* __restrict gs = g + stream * g_plane + b;
    const T* __restrict zs = z + stream * z_plane + b;
    const T* __restrict zp = z + (1 + p) * z_plane + b;
    const T* __restrict zq = z + (1 + q) * z_plane + b;
    T* __restrict out = gz + stream * g_plane + b;
    for (int64_t i = 0; i < m; ++i) {
      out[i] = gs[i] * d.d1[i];
      gz0[i] += gs[i] * (d.d3[i] * zp[i] * zq[i] + d.d2[i] * zs[i]);
    }
    // h_pq = s'' z_p z_q + ...: the first streams p and q each get the other's share; a pure
    // second derivative (p == q) gives stream p both.
    if (p == q) {
      add_product3(gz + (1 + p) * g_plane + b, gs, d.d2, zp, T(2), m);
    } else {
      add_product3(gz + (1 + p) * g_plane + b, gs, d.d2, zq, T(1), m);
      add_product3(gz + (1 + q) * g_plane + b, gs, d.d2, zp, T(1), m);
    }
  }
  // h_L = s'' sum_a z_a^2 + s' z_L: each summed first stream a gets 2 s'' z_a.
  for (std::size_t j = 0; j < shape.laplacians.size(); ++j) {
    const int64_t stream = 1 + firsts + static_cast<int64_t>(shape.pairs.size() + j);
    const T* __restrict gs = g + stream * g_plane + b;
    backward_linear_term(gs, z + stream * z_plane + b, d, m, gz + stream * g_plane + b, gz0);
    for (int64_t a : shape.laplacians[j]) {
      const T* __restrict za = z + (1 + a) * z_plane + b;
      for (int64_t i = 0; i < m; ++i) gz0[i] += gs[i] * d.d3[i] * za[i] * za[i];
      add_product3(gz + (1 + a) * g_plane + b, gs, d.d2, za, T(2), m);
    }
  }
}

template <typename T>
TESSERA_INLINE void forward_block(nn::Activation activation, const T* z, int64_t z_plane,
                                  const std::vector<const T*>& prim, const StreamShape& shape,
                                  int64_t b, int64_t m, T* h, int64_t h_plane, bool write_value) {
  BlockDerivatives<T> d;
  block_derivatives(activation, prim, b, m, write_value ? h + b : nullptr, d);
  forward_streams(d, z, z_plane, shape, b, m, h, h_plane);
}

template <typename T>
TESSERA_INLINE void backward_block(nn::Activation activation, const T* z, int64_t z_plane,
                                   const T* g, const std::vector<const T*>& prim,
                                   const StreamShape& shape, int64_t b, int64_t m, T* gz,
                                   int64_t g_plane) {
  BlockDerivatives<T> d;
  block_derivatives(activation, prim, b, m, static_cast<T*>(nullptr), d);
  backward_streams(d, z, z_plane, g, shape, b, m, gz, g_plane);
}

// Both of the above on one strip: sigma's derivatives formed once, the strip's pre-activations
// read while they are in L1. The same formulas as forward_block; where sigma''' shares a
// product with sigma' (gelu), the compiler may fuse another multiply into an add than it does
// in forward_block, which changes a rounding, not the arithmetic.
template <typename T>
TESSERA_INLINE void backward_and_forward_block(nn::Activation activation, const T* z,
                                               int64_t z_plane, const T* g,
                                               const std::vector<const T*>& prim,
                                               const StreamShape& shape, int64_t b, int64_t m,
                                               T* gz, int64_t g_plane, T* h, int64_t h_plane,
                                               bool write_value) {
  BlockDerivatives<T> d;
  block_derivatives(activation, prim, b, m, write_value ? h + b : nullptr, d);
  forward_streams(d, z, z_plane, shape, b, m, h, h_plane);
  backward_streams(d, z, z_plane, g, shape, b, m, gz, g_plane);
}

// Splits [0, plane) over LibTorch's intra-op threads.
template <typename F>
void for_ranges(int64_t plane, const F& body) {
  at::parallel_for(0, plane, grain, body);
}

template <typename T>
std::vector<const T*> offset(std::vector<const T*> pointers, int64_t by) {
  for (auto& p : pointers) p += by;
  return pointers;
}

template <typename T>
void forward_loop(nn::Activation activation, const torch::Tensor& pre,
                  const std::vector<torch::Tensor>& primitives, const StreamShape& shape,
                  torch::Tensor& out) {
  const int64_t plane = pre.size(1) * pre.size(2);
  const auto prim = pointers<T>(primitives);
  for_ranges(plane, [&](int64_t begin, int64_t end) {
    streams_forward_range(activation, pre.data_ptr<T>() + begin, plane, offset(prim, begin), shape,
                          end - begin, out.data_ptr<T>() + begin, plane, /*write_value=*/true);
  });
}

template <typename T>
void backward_loop(nn::Activation activation, const torch::Tensor& grad, const torch::Tensor& pre,
                   const std::vector<torch::Tensor>& primitives, const StreamShape& shape,
                   torch::Tensor& grad_pre) {
  const int64_t plane = pre.size(1) * pre.size(2);
  const auto prim = pointers<T>(primitives);
  for_ranges(plane, [&](int64_t begin, int64_t end) {
    streams_backward_range(activation, pre.data_ptr<T>() + begin, plane, grad.data_ptr<T>() + begin,
                           offset(prim, begin), shape, end - begin, grad_pre.data_ptr<T>() + begin,
                           plane);
  });
}

// Calls block(b, m) for every strip [b, b + m) of [0, count): full strips with m a constant.
template <typename Block>
TESSERA_INLINE void for_strips(int64_t count, const Block& block) {
  int64_t b = 0;
  for (; b + strip <= count; b += strip) block(b, strip);
  if (b < count) block(b, count - b);
}

template <typename T>
TESSERA_INLINE void forward_range(nn::Activation activation, const T* z, int64_t z_plane,
                                  const std::vector<const T*>& prim, const StreamShape& shape,
                                  int64_t count, T* h, int64_t h_plane, bool write_value) {
  for_strips(
      count, [&](int64_t b, int64_t m) __attribute__((always_inline)) {
        forward_block(activation, z, z_plane, prim, shape, b, m, h, h_plane, write_value);
      });
}

template <typename T>
TESSERA_INLINE void backward_range(nn::Activation activation, const T* z, int64_t z_plane,
                                   const T* g, const std::vector<const T*>& prim,
                                   const StreamShape& shape, int64_t count, T* gz,
                                   int64_t g_plane) {
  for_strips(
      count, [&](int64_t b, int64_t m) __attribute__((always_inline)) {
        backward_block(activation, z, z_plane, g, prim, shape, b, m, gz, g_plane);
      });
}

template <typename T>
TESSERA_INLINE void backward_and_forward_range(nn::Activation activation, const T* z,
                                               int64_t z_plane, const T* g,
                                               const std::vector<const T*>& prim,
                                               const StreamShape& shape, int64_t count, T* gz,
                                               int64_t g_plane, T* h, int64_t h_plane,
                                               bool write_value) {
  for_strips(
      count, [&](int64_t b, int64_t m) __attribute__((always_inline)) {
        backward_and_forward_block(activation, z, z_plane, g, prim, shape, b, m, gz, g_plane, h,
                                   h_plane, write_value);
      });
}

}  // namespace

// The strip loops' entry points carry the clones (see vector_clones.hpp); everything above is
// inlined.
#define TESSERA_STRIP_RANGES(T)                                                                  \
  TESSERA_VECTOR_CLONES void strips_forward_range(                                               \
      nn::Activation activation, const T* z, int64_t z_plane, const std::vector<const T*>& prim, \
      const StreamShape& shape, int64_t count, T* h, int64_t h_plane, bool write_value) {        \
    forward_range(activation, z, z_plane, prim, shape, count, h, h_plane, write_value);          \
  }                                                                                              \
  TESSERA_VECTOR_CLONES void strips_backward_range(                                              \
      nn::Activation activation, const T* z, int64_t z_plane, const T* g,                        \
      const std::vector<const T*>& prim, const StreamShape& shape, int64_t count, T* gz,         \
      int64_t g_plane) {                                                                         \
    backward_range(activation, z, z_plane, g, prim, shape, count, gz, g_plane);                  \
  }                                                                                              \
  TESSERA_VECTOR_CLONES void strips_backward_and_forward_range(                                  \
      nn::Activation activation, const T* z, int64_t z_plane, const T* g,                        \
      const std::vector<const T*>& prim, const StreamShape& shape, int64_t count, T* gz,         \
      int64_t g_plane, T* h, int64_t h_plane, bool write_value) {                                \
    backward_and_forward_range(activation, z, z_plane, g, prim, shape, count, gz, g_plane, h,    \
                               h_plane, write_value);                                            \
  }
TESSERA_STRIP_RANGES(float)
TESSERA_STRIP_RANGES(double)
#undef TESSERA_STRIP_RANGES

// The register kernels where they take the shape, the strip loops otherwise.
#define TESSERA_STREAM_RANGES(T)                                                                  \
  void streams_forward_range(nn::Activation activation, const T* z, int64_t z_plane,              \
                             const std::vector<const T*>& prim, const StreamShape& shape,         \
                             int64_t count, T* h, int64_t h_plane, bool write_value) {            \
    if (!registers_forward_range(activation, z, z_plane, prim, shape, count, h, h_plane,          \
                                 write_value))                                                    \
      strips_forward_range(activation, z, z_plane, prim, shape, count, h, h_plane, write_value);  \
  }                                                                                               \
  void streams_backward_range(nn::Activation activation, const T* z, int64_t z_plane, const T* g, \
                              const std::vector<const T*>& prim, const StreamShape& shape,        \
                              int64_t count, T* gz, int64_t g_plane) {                            \
    if (!registers_backward_range(activation, z, z_plane, g, prim, shape, count, gz, g_plane))    \
      strips_backward_range(activation, z, z_plane, g, prim, shape, count, gz, g_plane);          \
  }                                                                                               \
  void streams_backward_and_forward_range(                                                        \
      nn::Activation activation, const T* z, int64_t z_plane, const T* g,                         \
      const std::vector<const T*>& prim, const StreamShape& shape, int64_t count, T* gz,          \
      int64_t g_plane, T* h, int64_t h_plane, bool write_value) {                                 \
    if (!registers_backward_and_forward_range(activation, z, z_plane, g, prim, shape, count, gz,  \
                                              g_plane, h, h_plane, write_value))                  \
      strips_backward_and_forward_range(activation, z, z_plane, g, prim, shape, count, gz,        \
                                        g_plane, h, h_plane, write_value);                        \
  }
TESSERA_STREAM_RANGES(float)
TESSERA_STREAM_RANGES(double)
#undef TESSERA_STREAM_RANGES

bool sigma_is_first_primitive(nn::Activation activation) {
  return activation == nn::Activation::tanh || activation == nn::Activation::sin;
}

bool cpu_kernel_applies(const torch::Tensor& t) {
  return t.device().is_cpu() &&
         (t.scalar_type() == torch::kFloat32 || t.scalar_type() == torch::kFloat64);
}

void streams_forward_cpu(nn::Activation activation, const torch::Tensor& pre,
                         const std::vector<torch::Tensor>& primitives, const StreamShape& shape,
                         torch::Tensor& out) {
  AT_DISPATCH_FLOATING_TYPES(pre.scalar_type(), "taylor_streams_forward", [&] {
    forward_loop<scalar_t>(activation, pre, primitives, shape, out);
  });
}

void streams_backward_cpu(nn::Activation activation, const torch::Tensor& grad,
                          const torch::Tensor& pre, const std::vector<torch::Tensor>& primitives,
                          const StreamShape& shape, torch::Tensor& grad_pre) {
  AT_DISPATCH_FLOATING_TYPES(pre.scalar_type(), "taylor_streams_backward", [&] {
    backward_loop<scalar_t>(activation, grad, pre, primitives, shape, grad_pre);
  });
}

}  // namespace tessera::autodiff::taylor::detail
