// The forward (Taylor) engine: value, first and second derivative streams pushed through the
// MLP together, stacked as one [streams, n, width] tensor so each layer is one matrix product.
#include "tessera/autodiff/taylor.hpp"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "kernels/elementwise.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff {

namespace {

// The streams of features with periodic inputs (nn::MlpOptions::periodic_inputs): the other
// inputs' normalised values z (d/dx_a = scale_a), then cos(pi z) and sin(pi z) of each periodic
// input, whose derivatives along it are -r sin, r cos and, second, -r^2 cos, -r^2 sin with
// r = pi scale. Every mixed second derivative is 0.
torch::Tensor periodic_feature_streams(const nn::MlpImpl& network, const torch::Tensor& x,
                                       const taylor::StreamLayout& layout) {
  const auto& periodic = network.options().periodic_inputs;
  const int64_t inputs = x.size(1), plain = inputs - static_cast<int64_t>(periodic.size());
  const auto z = (x - network.shift()) * network.scale();
  auto f = torch::zeros(
      {layout.count(), x.size(0), plain + 2 * static_cast<int64_t>(periodic.size())}, x.options());
  f.select(0, 0).copy_(network.features(x));
  // column of a plain input; -1 for a periodic one
  std::vector<int64_t> column(static_cast<std::size_t>(inputs), -1);
  for (int64_t i = 0, next = 0; i < inputs; ++i)
    if (!network.is_periodic(i)) column[static_cast<std::size_t>(i)] = next++;
  const auto first_column_of = [&](int axis) {
    for (std::size_t k = 0; k < periodic.size(); ++k)
      if (periodic[k] == axis) return plain + 2 * static_cast<int64_t>(k);
    return int64_t{-1};
  };
  const auto rate = [&](int axis) { return M_PI * network.scale()[axis]; };
  const auto angle = [&](int axis) { return M_PI * z.select(1, axis); };
  // The pure second derivative along `axis` added into stream `stream` (zero for plain inputs).
  const auto add_second = [&](int64_t stream, int axis) {
    const int64_t c = first_column_of(axis);
    if (c < 0) return;
    const auto r2 = rate(axis) * rate(axis);
    f.select(0, stream).select(1, c).sub_(r2 * torch::cos(angle(axis)));
    f.select(0, stream).select(1, c + 1).sub_(r2 * torch::sin(angle(axis)));
  };
  for (std::size_t k = 0; k < layout.axes.size(); ++k) {
    const int axis = layout.axes[k];
    const auto stream = f.select(0, 1 + static_cast<int64_t>(k));
    if (const int64_t c = first_column_of(axis); c >= 0) {
      stream.select(1, c).copy_(-rate(axis) * torch::sin(angle(axis)));
      stream.select(1, c + 1).copy_(rate(axis) * torch::cos(angle(axis)));
    } else {
      stream.select(1, column[static_cast<std::size_t>(axis)]).fill_(network.scale()[axis]);
    }
  }
  int64_t stream = 1 + static_cast<int64_t>(layout.axes.size());
  for (const auto& [a, b] : layout.pairs) {
    if (a == b) add_second(stream, layout.axes[static_cast<std::size_t>(a)]);
    ++stream;
  }
  for (const auto& positions : layout.laplacians) {
    for (int position : positions)
      add_second(stream, layout.axes[static_cast<std::size_t>(position)]);
    ++stream;
  }
  return f;
}

// The streams of the features the first layer sees, [K, n, features]. They depend on x and
// buffers only (no parameter), so no graph is recorded.
torch::Tensor feature_streams(const nn::MlpImpl& network, const torch::Tensor& x,
                              const taylor::StreamLayout& layout) {
  torch::NoGradGuard no_grad;
  const int64_t n = x.size(0), streams = layout.count();
  const auto normalised = (x - network.shift()) * network.scale();
  const torch::Tensor& fourier = network.fourier_matrix();
  if (!network.options().periodic_inputs.empty())
    return periodic_feature_streams(network, x, layout);
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
  // A Laplacian stream: the pure second derivatives summed, -[sin p, cos p] sum_a rate_a^2.
  const int64_t first_laplacian =
      1 + static_cast<int64_t>(layout.axes.size() + layout.pairs.size());
  for (std::size_t k = 0; k < layout.laplacians.size(); ++k) {
    auto r = torch::zeros_like(fourier[0]);
    for (int position : layout.laplacians[k]) r = r + rate(position) * rate(position);
    fill(first_laplacian + static_cast<int64_t>(k), -sin_p * r, -cos_p * r);
  }
  return f;
}

// The weights and biases the layers apply: with adaptive activation sigma(c (W h + b)) =
// sigma((c W) h + c b), so the small weight matrix is scaled instead of the [K, n, width] streams.
std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> effective_parameters(
    const nn::MlpImpl& network) {
  auto weights = network.weights();
  auto biases = network.biases();
  const auto& slopes = network.slopes();
  for (std::size_t layer = 0; layer < slopes.size(); ++layer) {
    const auto c = *network.options().adaptive_scale * slopes[layer];
    weights[layer] = weights[layer] * c;
    biases[layer] = biases[layer] * c;
  }
  return {weights, biases};
}

// Output streams [K, n, outputs], the output bias added to the value stream. On a CPU the whole
// network is one fused node (cpu_node.cpp); elsewhere, and for the modified MLP
// (modified_mlp.cpp), one product and one fused element-wise node per layer over all points
// (a GPU wants the whole batch at once).
torch::Tensor propagate(const nn::MlpImpl& network, const torch::Tensor& x,
                        const taylor::StreamLayout& layout, TaylorPath path) {
  const auto [weights, biases] = effective_parameters(network);
  const auto activation = network.options().activation;
  const torch::Tensor features = feature_streams(network, x, layout);
  if (network.options().modified)
    return taylor::modified_network_streams(features, weights, biases, network.encoder_weights(),
                                            network.encoder_biases(), activation, layout);
  if (path == TaylorPath::automatic && taylor::detail::cpu_kernel_applies(features))
    return taylor::network_streams_cpu(features, weights, biases, activation, layout);
  return taylor::network_streams_per_layer(features, weights, biases, activation, layout);
}

// Every partial of order <= 2 whose output and axes exist.
bool within_reach(int64_t inputs, int64_t outputs, const std::set<Partial>& requested) {
  for (const auto& p : requested) {
    if (p.output < 0 || p.output >= outputs || p.order() > 2) return false;
    if (p.laplacian && p.wrt.empty()) return false;
    for (int axis : p.wrt)
      if (axis < 0 || axis >= inputs) return false;
  }
  return true;
}

// The features' streams of a plain network (no Fourier features, no periodic inputs) as
// feature_streams makes them, written element by element into rows [row, row + n) of `f`
// [K, rows, inputs] (zeros): in a grouped call, one tensor for every request instead of a
// handful of small operations per request.
template <typename T>
void plain_feature_streams_into(const nn::MlpImpl& network, const torch::Tensor& x,
                                const taylor::StreamLayout& layout, torch::Tensor& f, int64_t row) {
  const auto points = x.contiguous();
  const int64_t n = x.size(0), inputs = x.size(1), rows = f.size(1);
  const T* in = points.data_ptr<T>();
  const T* shift = network.shift().data_ptr<T>();
  const T* scale = network.scale().data_ptr<T>();
  T* value = f.data_ptr<T>() + row * inputs;
  for (int64_t p = 0; p < n; ++p)
    for (int64_t i = 0; i < inputs; ++i)
      value[p * inputs + i] = (in[p * inputs + i] - shift[i]) * scale[i];
  for (std::size_t k = 0; k < layout.axes.size(); ++k) {
    const int axis = layout.axes[k];
    T* stream = f.data_ptr<T>() + ((1 + static_cast<int64_t>(k)) * rows + row) * inputs;
    for (int64_t p = 0; p < n; ++p) stream[p * inputs + axis] = scale[axis];
  }
}

// The width of the first layer's input: the features feature_streams makes.
int64_t feature_width(const nn::MlpImpl& network) {
  if (network.fourier_matrix().defined()) return 2 * network.fourier_matrix().size(1);
  return network.options().inputs + static_cast<int64_t>(network.options().periodic_inputs.size());
}

// Whether plain_feature_streams_into applies to `network` at x.
bool plain_features(const nn::MlpImpl& network, const torch::Tensor& x) {
  return !network.fourier_matrix().defined() && network.options().periodic_inputs.empty() &&
         network.shift().scalar_type() == x.scalar_type() &&
         network.scale().scalar_type() == x.scalar_type() && network.shift().is_contiguous() &&
         network.scale().is_contiguous();
}

// The partials of every request of a grouped call as tensors of their own, with one backward
// node for all of them: selecting each (two view nodes apiece, each zero-filling the whole
// output in the backward) costs more than the network's own backward on small point sets, and
// so do a few tensor operations per partial. `where` holds (stream, first row, rows, output)
// per partial; `out` is [K, n, outputs], contiguous, float32 or float64.
class SplitPartials : public torch::autograd::Function<SplitPartials> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* context,
                                                const torch::Tensor& out,
                                                const std::vector<int64_t>& where) {
    context->saved_data["where"] = where;
    context->saved_data["sizes"] = out.sizes().vec();
    context->set_materialize_grads(false);
    TESSERA_ASSERT(out.device().is_cpu() && out.is_contiguous() && out.dim() == 3,
                   "SplitPartials: the grouped node's output is a contiguous CPU [K, n, outputs]");
    torch::autograd::variable_list parts;
    AT_DISPATCH_FLOATING_TYPES(out.scalar_type(), "split_partials", [&] {
      const scalar_t* from = out.data_ptr<scalar_t>();
      for (std::size_t i = 0; i < where.size(); i += 4) {
        auto part = torch::empty({where[i + 2]}, out.options());
        scalar_t* to = part.data_ptr<scalar_t>();
        visit(out.sizes(), where, i, [&](int64_t at, int64_t j) { to[j] = from[at]; });
        parts.push_back(part);
      }
    });
    return parts;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* context,
                                                 torch::autograd::variable_list grads) {
    const auto where = context->saved_data["where"].toIntVector();
    const auto sizes = context->saved_data["sizes"].toIntVector();
    torch::Tensor grad;
    for (std::size_t i = 0; i < where.size(); i += 4) {
      if (!grads[i / 4].defined()) continue;
      const auto g = grads[i / 4].contiguous();
      if (!grad.defined()) grad = torch::zeros(sizes, g.options());
      AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "split_partials_backward", [&] {
        scalar_t* to = grad.data_ptr<scalar_t>();
        const scalar_t* from = g.data_ptr<scalar_t>();
        visit(sizes, where, i, [&](int64_t at, int64_t j) { to[at] += from[j]; });
      });
    }
    return {grad, torch::Tensor()};
  }

 private:
  // Calls f(element of out, element of the part) for every element of part i / 4.
  template <typename F>
  static void visit(at::IntArrayRef sizes, const std::vector<int64_t>& where, std::size_t i,
                    const F& f) {
    const int64_t rows = sizes[1], outputs = sizes[2];
    const int64_t first = (where[i] * rows + where[i + 1]) * outputs + where[i + 3];
    for (int64_t j = 0; j < where[i + 2]; ++j) f(first + j * outputs, j);
  }
};

}  // namespace

bool taylor_supports(const nn::MlpOptions& options, const std::set<Partial>& requested) {
  return within_reach(options.inputs, options.outputs, requested);
}

bool taylor_supports(const nn::FbpinnOptions& options, const std::set<Partial>& requested) {
  return within_reach(options.inputs, options.outputs, requested);
}

bool taylor_groups(const nn::MlpImpl& network, const torch::Tensor& x) {
  return !network.options().modified && !network.bf16_products() &&
         taylor::detail::cpu_kernel_applies(x);
}

std::vector<std::vector<Partials>> taylor_partials_grouped(
    const std::vector<NetworkPoints>& groups,
    const std::vector<std::vector<std::set<Partial>>>& requested, bool create_graph) {
  TESSERA_ASSERT(!groups.empty() && requested.size() == groups.size(),
                 "taylor_partials_grouped: one request list per group");
  std::set<Partial> all;
  for (const auto& list : requested)
    for (const auto& r : list) all.insert(r.begin(), r.end());
  const auto layout = taylor::stream_layout(all);
  std::optional<torch::NoGradGuard> no_graph;
  if (!create_graph) no_graph.emplace();
  int64_t total = 0, width = 0;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t i = 0; i < groups[g].xs.size(); ++i) {
      const auto& x = groups[g].xs[i];
      const auto& network = *groups[g].network;
      const auto own = taylor::checked_layout(taylor_supports(network.options(), requested[g][i]),
                                              x, network.options().inputs, requested[g][i]);
      TESSERA_ASSERT(own.count() == layout.count(),
                     "taylor_partials_grouped: the requests need different stream layouts");
      total += x.size(0);
      width = feature_width(network);
    }
  auto features = torch::zeros({layout.count(), total, width},
                               groups.front().xs.front().options().requires_grad(false));
  std::vector<int64_t> group_rows;
  std::vector<std::vector<torch::Tensor>> weights, biases;  // [layer][group]
  int64_t row = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& network = *groups[g].network;
    int64_t rows = 0;
    for (const auto& x : groups[g].xs) {
      if (plain_features(network, x)) {
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "plain_feature_streams", [&] {
          plain_feature_streams_into<scalar_t>(network, x.detach(), layout, features, row);
        });
      } else {
        features.narrow(1, row, x.size(0)).copy_(feature_streams(network, x.detach(), layout));
      }
      row += x.size(0);
      rows += x.size(0);
    }
    group_rows.push_back(rows);
    const auto [w, b] = effective_parameters(network);
    weights.resize(w.size());
    biases.resize(b.size());
    for (std::size_t layer = 0; layer < w.size(); ++layer) {
      weights[layer].push_back(w[layer]);
      biases[layer].push_back(b[layer]);
    }
  }
  const auto out = taylor::grouped_network_streams_cpu(
      features, weights, biases, groups.front().network->options().activation, layout, group_rows);
  std::vector<int64_t> where;
  row = 0;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t i = 0; i < groups[g].xs.size(); ++i) {
      const int64_t n = groups[g].xs[i].size(0);
      for (const auto& p : requested[g][i])
        where.insert(where.end(), {layout.stream_of(p), row, n, p.output});
      row += n;
    }
  const auto parts = SplitPartials::apply(out, where);
  std::vector<std::vector<Partials>> result(groups.size());
  std::size_t next = 0;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t i = 0; i < groups[g].xs.size(); ++i) {
      Partials partials;
      for (const auto& p : requested[g][i]) partials[p] = parts[next++];
      result[g].push_back(std::move(partials));
    }
  return result;
}

Partials taylor_partials(const nn::MlpImpl& network, const torch::Tensor& x,
                         const std::set<Partial>& requested, bool create_graph, TaylorPath path) {
  const auto layout = taylor::checked_layout(taylor_supports(network.options(), requested), x,
                                             network.options().inputs, requested);
  std::optional<torch::NoGradGuard> no_graph;
  if (!create_graph) no_graph.emplace();
  const auto out = propagate(network, x.detach(), layout, path);
  return taylor::partials_from_streams(out, layout, requested);
}

}  // namespace tessera::autodiff
