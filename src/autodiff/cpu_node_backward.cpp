// The backward of the whole-network CPU node (cpu_node.cpp): the layers in reverse,
// block by block while a block's streams sit in cache, the activation's backward fused, the
// parameter gradients summed per lane over a chunk of blocks and the chunks added in order.
#include <ATen/Parallel.h>

#include <cstring>

#include "cpu_node_layers.hpp"

namespace tessera::autodiff::taylor::node {

namespace {

// Where each layer's weight and bias gradients sit in one flat buffer.
struct GradientLayout {
  std::vector<int64_t> weight, bias;
  int64_t size = 0;
  template <typename T>
  explicit GradientLayout(const std::vector<Layer<T>>& layers) {
    for (const auto& layer : layers) {
      weight.push_back(size);
      size += layer.out * layer.in;
      bias.push_back(size);
      size += layer.out;
    }
  }
};

// Blocks per chunk of the backward. Each chunk sums its parameter gradients per lane (see
// gemm_lanes), folds the lanes once at its end, and the chunks are added in order: the result
// does not depend on how chunks were spread over threads. A chunk holds blocks of one group.
constexpr int64_t blocks_per_chunk = 8;

// The sum of n lanes, halves added pairwise: lane[i] + lane[i + n/2] for every i < n/2, then
// the same on those sums, down to one. The order is fixed, so every build gives the same bits;
// written on vectors of n/2 lanes, each level is one addition of two halves (the scalar loop the
// compiler made of it was a visible cost of the backward: docs/benchmarks.md, "Lane sums as a
// pairwise tree").
template <typename T, int64_t n>
T sum_lanes(const T* lane) {
  if constexpr (n == 2) {
    return lane[0] + lane[1];
  } else {
    typedef T Half __attribute__((vector_size(n / 2 * sizeof(T))));
    Half low, high;
    std::memcpy(&low, lane, sizeof low);
    std::memcpy(&high, lane + n / 2, sizeof high);
    const Half sums = low + high;
    T halves[n / 2];
    std::memcpy(halves, &sums, sizeof sums);
    return sum_lanes<T, n / 2>(halves);
  }
}

}  // namespace

template <typename T>
std::vector<torch::Tensor> backward_pass(const std::vector<Layer<T>>& layers,
                                         nn::Activation activation,
                                         const detail::StreamShape& shape, const Blocks& blocks,
                                         const Activations& saved, const torch::Tensor& grad_out) {
  const auto options = grad_out.options();
  const int64_t K = blocks.streams, P = blocks.padded(), L = lanes<T>();
  const std::size_t hidden = layers.size() - 1;
  const GradientLayout layout(layers);
  // Every group's blocks in chunks of at most blocks_per_chunk: (group, first block, end).
  struct Chunk {
    int64_t group, start, end;
  };
  std::vector<Chunk> chunk_list;
  for (int64_t group = 0; group < blocks.groups(); ++group)
    for (int64_t start = blocks.first_block(group); start < blocks.first_block(group + 1);
         start += blocks_per_chunk)
      chunk_list.push_back(
          {group, start, std::min(blocks.first_block(group + 1), start + blocks_per_chunk)});
  const auto chunks = static_cast<int64_t>(chunk_list.size());
  auto partial = unwritten({chunks, layout.size}, options);
  // A bias gradient is g_0 . 1.
  const auto ones = uninitialised<T>(blocks.largest);
  std::fill(ones.get(), ones.get() + blocks.largest, T(1));
  at::parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    // The gradient at a layer's output, at its pre-activations (two: the layer's own, still
    // read by its weight gradient, and the one below's), its recomputed input, and a recomputed
    // layer's pre-activations.
    Scratch<T> scratch(5, scratch_size(layers, blocks));
    T *grad_h = scratch[0], *input = scratch[2], *unsaved_pre = scratch[3];
    T* grad_z[2] = {scratch[1], scratch[4]};
    // Written by each chunk's first block (accumulate = false), so never read uninitialised.
    const auto by_lane = uninitialised<T>(layout.size * L);
    for (int64_t chunk = first; chunk < last; ++chunk) {
      const auto [group, chunk_start, chunk_end] = chunk_list[static_cast<std::size_t>(chunk)];
      for (int64_t block = chunk_start; block < chunk_end; ++block) {
        const bool accumulate = block > chunk_start;
        const int64_t b0 = blocks.start[block], size = blocks.rows(block), vectors = size / L;
        const auto features = contiguous<const T*>(
            saved.features.template data_ptr<T>() + b0 * layers[0].in, P * layers[0].in);
        // Hidden layer l's pre-activations: saved, or recomputed here (only the first layer's,
        // from the features, so before the walk down the layers).
        // The forward's choice is read from what it saved, so the two cannot disagree.
        const auto pre = [&](std::size_t l) {
          return !saved.pre[l].defined()
                     ? contiguous<const T*>(unsaved_pre, size * layers[l].out)
                     : as_const(saved_pre<T>(saved, blocks, l, b0, layers[l].out));
        };
        if (hidden > 0 && !saved.pre[0].defined())
          layer_products(layers[0].at(group), blocks, size, features,
                         contiguous(unsaved_pre, size * layers[0].out));
        // Which of grad_z holds the gradient at layer l's pre-activations (l < hidden).
        int current = 0;
        for (std::size_t l = layers.size(); l-- > 0;) {
          const Layer<T> layer = layers[l].at(group);
          const int64_t w = layer.out, in = layer.in;
          const auto gz =
              l == hidden ? contiguous<const T*>(grad_out.template data_ptr<T>() + b0 * w, P * w)
                          : contiguous<const T*>(grad_z[current], size * w);
          auto h = features;
          if (l > 0) {
            // g_h = W^T g_z for every stream, into the layer below; then that layer's output
            // streams (this layer's input) and the gradient at its pre-activations.
            for (int64_t k = 0; k < K; ++k)
              gemm(in, vectors, w, layer.weight, 1, in, gz[k], size, grad_h + k * size * in, size,
                   false, static_cast<const T*>(nullptr));
            h = layer_output_and_backward<T>(activation, shape, size, pre(l - 1),
                                             saved.primitives[l - 1], b0, in, grad_h,
                                             grad_z[1 - current], input);
            current = 1 - current;
          }
          // dW = sum_k g_k h_k^T, db = g_0 . 1.
          detail::gemm_lanes(w, in, vectors, K, gz, size, h, size,
                             by_lane.get() + layout.weight[l] * L, accumulate);
          detail::gemm_lanes(w, 1, vectors, 1, gz, size, contiguous<const T*>(ones.get(), 0), 0,
                             by_lane.get() + layout.bias[l] * L, accumulate);
        }
      }
      T* sums = partial.template data_ptr<T>() + chunk * layout.size;
      for (int64_t j = 0; j < layout.size; ++j)
        sums[j] = sum_lanes<T, lanes<T>()>(by_lane.get() + j * L);
    }
  });
  auto total = torch::zeros({blocks.groups(), layout.size}, options);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    T* sum = total.template data_ptr<T>() +
             chunk_list[static_cast<std::size_t>(chunk)].group * layout.size;
    const T* part = partial.template data_ptr<T>() + chunk * layout.size;
    for (int64_t j = 0; j < layout.size; ++j) sum[j] += part[j];
  }
  std::vector<torch::Tensor> grads;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Layer<T>& layer = layers[l];
    grads.push_back(total.narrow(1, layout.weight[l], layer.out * layer.in));
    grads.push_back(total.narrow(1, layout.bias[l], layer.out));
  }
  return grads;
}

template std::vector<torch::Tensor> backward_pass<float>(const std::vector<Layer<float>>&,
                                                         nn::Activation, const detail::StreamShape&,
                                                         const Blocks&, const Activations&,
                                                         const torch::Tensor&);
template std::vector<torch::Tensor> backward_pass<double>(const std::vector<Layer<double>>&,
                                                          nn::Activation,
                                                          const detail::StreamShape&, const Blocks&,
                                                          const Activations&, const torch::Tensor&);

}  // namespace tessera::autodiff::taylor::node
