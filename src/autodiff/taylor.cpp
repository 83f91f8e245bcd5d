// The forward (Taylor) engine: value, first and second derivative streams pushed through the
// MLP together, stacked as one [streams, n, width] tensor so each layer is one matrix product.
#include "tessera/autodiff/taylor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff {

namespace {

// The streams of the features the first layer sees, [K, n, features]. They depend on x and
// buffers only (no parameter), so no graph is recorded.
torch::Tensor feature_streams(const nn::MlpImpl& network, const torch::Tensor& x,
                              const taylor::StreamLayout& layout) {
  torch::NoGradGuard no_grad;
  const int64_t n = x.size(0), streams = layout.count();
  const auto normalised = (x - network.shift()) * network.scale();
  const torch::Tensor& fourier = network.fourier_matrix();
  if (!fourier.defined()) {
    // (x - shift) * scale: d/dx_i is scale_i e_i, every second derivative 0.
    auto f = torch::zeros({streams, n, x.size(1)}, x.options());
    f.select(0, 0).copy_(normalised);
    for (std::size_t k = 0; k < layout.axes.size(); ++k) {
      const int axis = layout.axes[k];
      f.select(0, 1 + static_cast<int64_t>(k)).select(1, axis).fill_(network.scale()[axis]);
    }
    return f;
  }
  // [sin p, cos p] with p = 2 pi normalised B: d p / d x_i = 2 pi scale_i B[i, :] (constant).
  const int64_t count = fourier.size(1);
  const auto projected = 2.0 * M_PI * torch::matmul(normalised, fourier);
  const auto sin_p = torch::sin(projected), cos_p = torch::cos(projected);
  auto rate = [&](int position) {
    const int axis = layout.axes[static_cast<std::size_t>(position)];
    return (2.0 * M_PI) * network.scale()[axis] * fourier[axis];
  };
  auto f = torch::empty({streams, n, 2 * count}, x.options());
  auto fill = [&](int64_t stream, const torch::Tensor& sin_part, const torch::Tensor& cos_part) {
    f.select(0, stream).narrow(1, 0, count).copy_(sin_part);
    f.select(0, stream).narrow(1, count, count).copy_(cos_part);
  };
  fill(0, sin_p, cos_p);
  for (std::size_t k = 0; k < layout.axes.size(); ++k) {
    const auto r = rate(static_cast<int>(k));
    fill(1 + static_cast<int64_t>(k), cos_p * r, -sin_p * r);
  }
  for (std::size_t k = 0; k < layout.pairs.size(); ++k) {
    const auto r = rate(layout.pairs[k].first) * rate(layout.pairs[k].second);
    fill(1 + static_cast<int64_t>(layout.axes.size() + k), -sin_p * r, -cos_p * r);
  }
  return f;
}

// Output streams [K, n, outputs] (bias not added) and the value [n, outputs].
std::pair<torch::Tensor, torch::Tensor> propagate(const nn::MlpImpl& network, const torch::Tensor& x,
                                                  const taylor::StreamLayout& layout) {
  const auto& options = network.options();
  const auto& weights = network.weights();
  const auto& biases = network.biases();
  const auto& slopes = network.slopes();
  const int64_t n = x.size(0), streams = layout.count();
  torch::Tensor h = feature_streams(network, x, layout);
  for (std::size_t layer = 0; layer + 1 < weights.size(); ++layer) {
    torch::Tensor weight = weights[layer], bias = biases[layer];
    if (!slopes.empty()) {
      // sigma(c (W h + b)) = sigma((c W) h + c b): scaling the small weight matrix instead of
      // the [K, n, width] streams.
      const auto c = *options.adaptive_scale * slopes[layer];
      weight = weight * c;
      bias = bias * c;
    }
    const auto pre = torch::mm(h.view({streams * n, h.size(2)}), weight.t())
                         .view({streams, n, weight.size(0)});
    h = taylor::activate_streams(options.activation, pre, bias, layout);
  }
  const auto out = torch::mm(h.view({streams * n, h.size(2)}), weights.back().t())
                       .view({streams, n, weights.back().size(0)});
  return {out, out.select(0, 0) + biases.back()};
}

// Points per block on a CPU (TESSERA_TAYLOR_BLOCK overrides, for tuning): 512 to 2048 were
// equally fast for a [2, 50, 50, 50, 1] network, 20% faster than whole batches of 4096.
int64_t cpu_block_points() {
  static const int64_t points = [] {
    const char* text = std::getenv("TESSERA_TAYLOR_BLOCK");
    return text ? std::max<int64_t>(std::atoll(text), 1) : int64_t{1024};
  }();
  return points;
}

}  // namespace

bool taylor_supports(const nn::MlpOptions& options, const std::set<Partial>& requested) {
  for (const auto& p : requested) {
    if (p.output < 0 || p.output >= options.outputs || p.wrt.size() > 2) return false;
    for (int axis : p.wrt)
      if (axis < 0 || axis >= options.inputs) return false;
  }
  return true;
}

Partials taylor_partials(const nn::MlpImpl& network, const torch::Tensor& x,
                         const std::set<Partial>& requested, bool create_graph) {
  TESSERA_CHECK(taylor_supports(network.options(), requested),
                "forward engine: a requested partial has order > 2 or names a missing output "
                "or input");
  TORCH_CHECK(x.dim() == 2 && x.size(1) == network.options().inputs,
              "taylor_partials: x must be [n, ", network.options().inputs, "], got ", x.sizes());
  std::optional<torch::NoGradGuard> no_graph;
  if (!create_graph) no_graph.emplace();
  const auto layout = taylor::stream_layout(requested);
  // On a CPU, blocks of points keep each layer's [K, points, width] streams in cache between
  // the matrix product and the element-wise step (and in the backward); a GPU wants it whole.
  const int64_t n = x.size(0);
  const int64_t block = x.device().is_cpu() ? cpu_block_points() : std::max<int64_t>(n, 1);
  std::vector<torch::Tensor> outs, values;
  for (int64_t begin = 0; begin == 0 || begin < n; begin += block) {
    auto [out, value] = propagate(network, x.detach().narrow(0, begin, std::min(block, n - begin)), layout);
    outs.push_back(out);
    values.push_back(value);
  }
  const auto out = outs.size() == 1 ? outs[0] : torch::cat(outs, 1);
  const auto value = values.size() == 1 ? values[0] : torch::cat(values, 0);
  Partials result;
  for (const auto& p : requested) {
    if (p.wrt.empty()) {
      result[p] = value.select(1, p.output);
      continue;
    }
    const int64_t stream = p.wrt.size() == 1 ? layout.first_stream(p.wrt[0])
                                             : layout.second_stream(p.wrt[0], p.wrt[1]);
    result[p] = out.select(0, stream).select(1, p.output);
  }
  return result;
}

}  // namespace tessera::autodiff
