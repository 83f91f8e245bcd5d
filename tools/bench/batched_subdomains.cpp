// Many small subdomain networks on one rank against one network on the same points, forward
// and backward of a first-order residual loss (u_x + u_y)^2, from one invocation:
//
//   build/bench_batched_subdomains [points] [pieces per axis] [overlap] [calls]
//                                  (defaults 8192, 8, 0.5, 60; one thread, float32)
//
// Variants, alternating call by call so that load from other tenants falls on all alike:
//   one network        one [16, 16] MLP on all points, forward engine (the reference);
//   one network, pairs the same MLP on as many points as the FBPINN's (point, subdomain) pairs:
//                      the products the FBPINN's networks do, without the windows;
//   fbpinn forward     pieces^2 overlapping subdomains ([16, 16] each) as one nn::Fbpinn,
//                      forward engine (stacked per-layer products over a padded batch);
//   fbpinn reverse     the same network by the reverse engine (autograd of autograd);
//   separate networks  pieces^2 nn::Mlp, each on the points of its own cell, one after the
//                      other (how XPINN subdomains on one rank were evaluated before they were
//                      evaluated together);
//   stacked networks   pieces^2 networks stored as stacked weights (as nn::Fbpinn stores its
//                      subdomains') and evaluated as one grouped node, each on its own cell's
//                      points: every point meets one network, so the products are the one
//                      network's and the difference is the cost of batching alone (the
//                      features are built once, as a training pass builds them per sample);
//   stacked at the call  the separate networks' own parameters stacked at every call into the
//                      same grouped node, the gradients unstacked back to each network's
//                      tensors (how a rank's XPINN subdomains are evaluated together).
// The figure to quote is the median time per call and its ratio to the one network's. Each
// FBPINN point meets (1 + overlap)^2 supports on average in the interior, so its products do
// that many times the one network's work; at a small overlap the batch is close to one
// network's points.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include <malloc.h>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/autodiff/taylor.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/nn/fbpinn.hpp"
#include "tessera/nn/mlp.hpp"

namespace {

using namespace tessera;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const std::set<autodiff::Partial> kFirst{{0, {0}, false}, {0, {1}, false}};

torch::Tensor residual_loss(const autodiff::Partials& p) {
  return torch::square(p.at({0, {0}, false}) + p.at({0, {1}, false})).sum();
}

nn::MlpOptions small_network(double lo0, double hi0, double lo1, double hi1, int64_t id) {
  nn::MlpOptions o;
  o.inputs = 2;
  o.outputs = 1;
  o.hidden = {16, 16};
  o.lower = {lo0, lo1};
  o.upper = {hi0, hi1};
  o.subdomain = id;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t points = argc > 1 ? std::atoll(argv[1]) : 8192;
  const int64_t pieces = argc > 2 ? std::atoll(argv[2]) : 8;
  const double overlap = argc > 3 ? std::atof(argv[3]) : 0.5;
  const int calls = argc > 4 ? std::atoi(argv[4]) : 60;
  if (points < 1 || pieces < 1 || overlap <= 0 || overlap > 1 || calls < 1) {
    std::fprintf(stderr,
                 "usage: bench_batched_subdomains [points >= 1] [pieces >= 1] [overlap in (0, 1]] "
                 "[calls >= 1]\n");
    return 2;
  }
  // As the program does (parallel/environment.cpp).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  torch::set_num_threads(1);
  torch::manual_seed(1);
  const auto x = torch::rand({points, 2});

  nn::Mlp one(small_network(0, 1, 0, 1, 0));
  one->to(torch::kFloat32);

  nn::FbpinnOptions fo;
  fo.inputs = 2;
  fo.outputs = 1;
  fo.hidden = {16, 16};
  fo.overlap = overlap;
  std::vector<double> edges;
  for (int64_t k = 0; k <= pieces; ++k) edges.push_back(static_cast<double>(k) / pieces);
  fo.levels = {nn::WindowGrid{{edges, edges}}};
  nn::Fbpinn fbpinn(fo);
  fbpinn->to(torch::kFloat32);
  {
    // Output layers start at zero; random ones make the backward do its full work.
    torch::NoGradGuard no_grad;
    fbpinn->named_parameters()["weight2"].normal_(0, 0.3);
  }

  // As many points as the FBPINN's (point, subdomain) pairs, for one network: the products the
  // FBPINN's networks do, without the windows.
  const auto pairs = fbpinn->plans(x).front().pairs();
  const auto x_pairs = torch::rand({pairs, 2});

  // The cells' own points for the separate networks.
  std::vector<nn::Mlp> separate;
  std::vector<torch::Tensor> cell_points;
  const auto cell = (x * pieces).floor().clamp(0, pieces - 1).to(torch::kLong);
  const auto cell_id = cell.select(1, 0) + pieces * cell.select(1, 1);
  for (int64_t j = 0; j < pieces * pieces; ++j) {
    const double i0 = static_cast<double>(j % pieces), i1 = static_cast<double>(j / pieces);
    separate.emplace_back(
        small_network(i0 / pieces, (i0 + 1) / pieces, i1 / pieces, (i1 + 1) / pieces, j));
    separate.back()->to(torch::kFloat32);
    cell_points.push_back(x.index_select(0, (cell_id == j).nonzero().squeeze(1)));
  }

  // The stacked networks' rows: the cells' points one cell after the other.
  const auto layout = autodiff::taylor::stream_layout(kFirst);
  std::vector<int64_t> group_rows;
  for (const auto& points_of_cell : cell_points) group_rows.push_back(points_of_cell.size(0));
  // As each network's own feature streams: (x - shift) * scale and d/dx_a = scale_a e_a. They
  // depend on the points only, so a training pass builds them once per sample.
  const auto stacked_features = [&] {
    auto f = torch::zeros({layout.count(), points, int64_t{2}});
    int64_t start = 0;
    for (std::size_t j = 0; j < separate.size(); ++j) {
      const auto& network = *separate[j];
      const int64_t n = cell_points[j].size(0);
      f[0].narrow(0, start, n).copy_((cell_points[j] - network.shift()) * network.scale());
      for (int a = 0; a < 2; ++a)
        f[1 + a].narrow(0, start, n).select(1, a).fill_(network.scale()[a]);
      start += n;
    }
    return f;
  }();
  // The separate networks' initial weights, stored stacked: one leaf per layer for all cells.
  // (Stacking separately stored parameters at every call, and splitting the gradient back,
  // costs a LibTorch operation per network and layer each way.)
  std::vector<torch::Tensor> stacked_weights, stacked_biases;
  for (std::size_t layer = 0; layer < separate.front()->biases().size(); ++layer) {
    std::vector<torch::Tensor> w, b;
    for (const auto& network : separate) {
      w.push_back(network->weights()[layer].detach());
      b.push_back(network->biases()[layer].detach());
    }
    stacked_weights.push_back(torch::stack(w).set_requires_grad(true));
    stacked_biases.push_back(torch::stack(b).set_requires_grad(true));
  }

  const std::vector<std::pair<const char*, std::function<void()>>> variants{
      {"one network",
       [&] {
         auto loss = residual_loss(autodiff::taylor_partials(*one, x, kFirst, true));
         loss.backward();
       }},
      {"one network, pairs",
       [&] {
         auto loss = residual_loss(autodiff::taylor_partials(*one, x_pairs, kFirst, true));
         loss.backward();
       }},
      {"fbpinn forward",
       [&] {
         auto loss = residual_loss(autodiff::taylor_partials(*fbpinn, x, kFirst, true));
         loss.backward();
       }},
      {"fbpinn reverse",
       [&] {
         const auto function = [&](const torch::Tensor& y) { return fbpinn->forward(y); };
         auto loss = residual_loss(autodiff::reverse_partials(function, x, kFirst, true));
         loss.backward();
       }},
      {"separate networks",
       [&] {
         for (std::size_t j = 0; j < separate.size(); ++j) {
           auto loss =
               residual_loss(autodiff::taylor_partials(*separate[j], cell_points[j], kFirst, true));
           loss.backward();
         }
       }},
      {"stacked networks",
       [&] {
         const auto out = autodiff::taylor::grouped_network_streams_cpu(
             stacked_features, stacked_weights, stacked_biases, nn::Activation::tanh, layout,
             group_rows);
         auto loss = torch::square(out[1] + out[2]).sum();
         loss.backward();
       }},
      {"stacked at the call",
       [&] {
         std::vector<torch::Tensor> w, b;
         for (std::size_t layer = 0; layer < separate.front()->biases().size(); ++layer) {
           std::vector<torch::Tensor> wl, bl;
           for (const auto& network : separate) {
             wl.push_back(network->weights()[layer]);
             bl.push_back(network->biases()[layer]);
           }
           w.push_back(torch::stack(wl));
           b.push_back(torch::stack(bl));
         }
         const auto out = autodiff::taylor::grouped_network_streams_cpu(
             stacked_features, w, b, nn::Activation::tanh, layout, group_rows);
         auto loss = torch::square(out[1] + out[2]).sum();
         loss.backward();
       }},
  };
  std::vector<std::vector<double>> ms(variants.size());
  for (int call = -3; call < calls; ++call)
    for (std::size_t v = 0; v < variants.size(); ++v) {
      const auto start = std::chrono::steady_clock::now();
      variants[v].second();
      const double took =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      if (call >= 0) ms[v].push_back(took);
    }
  std::printf(
      "%lld points, %lld x %lld subdomains [16, 16], overlap %.2f (%.2f supports per point), "
      "float32, one thread, %d calls each, forward + backward\n",
      static_cast<long long>(points), static_cast<long long>(pieces),
      static_cast<long long>(pieces), overlap,
      static_cast<double>(pairs) / static_cast<double>(points), calls);
  const double reference = median(ms.front());
  for (std::size_t v = 0; v < variants.size(); ++v)
    std::printf("%-20s median %8.3f ms  min %8.3f ms  %6.2fx one network\n", variants[v].first,
                median(ms[v]), *std::min_element(ms[v].begin(), ms[v].end()),
                median(ms[v]) / reference);
  return 0;
}
