// The forward engine's whole-network CPU node against the per-layer path it replaced, on the
// seed network ([2, 50, 50, 50, 1] tanh, value + 2 first derivatives + Laplacian), forward and
// backward, from one invocation. The two alternate call by call, so load from other tenants of
// a shared machine falls on both alike; the median of the per-pair ratios is the figure to
// quote (single runs of a whole training vary too much from run to run to show differences of a
// few percent: docs/benchmarks.md, "Benchmark method").
//
//   build/bench_network_node [points] [pairs]      (defaults 4096 and 150; one thread)
//
// To compare two versions of the node, build each and alternate the two binaries, or put a
// temporary switch inside the library and alternate its settings here: in-process pairs
// resolve small differences that whole-program runs cannot.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <malloc.h>

#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/torch_pch.hpp"

namespace {

using namespace tessera;
namespace taylor = tessera::autodiff::taylor;

struct Network {
  std::vector<torch::Tensor> weights, biases;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t points = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int pairs = argc > 2 ? std::atoi(argv[2]) : 150;
  if (points < 1 || pairs < 1) {
    std::fprintf(stderr, "usage: bench_network_node [points >= 1] [pairs >= 1]\n");
    return 2;
  }
  // As the program does (parallel/environment.cpp): without these, page faults on LibTorch's
  // large temporaries dominate (docs/benchmarks.md, "Malloc thresholds").
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  torch::set_num_threads(1);
  torch::manual_seed(1);
  taylor::StreamLayout layout;
  layout.axes = {0, 1};
  layout.laplacians = {{0, 1}};
  auto features = torch::zeros({layout.count(), points, 2});
  features[0] = torch::rand({points, 2});
  features[1].select(1, 0).fill_(1);
  features[2].select(1, 1).fill_(1);
  Network net;
  const std::vector<int64_t> widths{2, 50, 50, 50, 1};
  std::vector<torch::Tensor> parameters;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    net.weights.push_back(
        (torch::randn({widths[l + 1], widths[l]}) / std::sqrt(double(widths[l]))).requires_grad_());
    net.biases.push_back((0.1 * torch::randn({widths[l + 1]})).requires_grad_());
    parameters.push_back(net.weights.back());
    parameters.push_back(net.biases.back());
  }
  const auto weight = torch::randn({layout.count(), points, 1});
  // One forward and backward; returns milliseconds, keeps the output and gradients.
  std::vector<torch::Tensor> last[2];
  const auto run = [&](int variant) {
    const auto start = std::chrono::steady_clock::now();
    const auto out = variant == 0
                         ? taylor::network_streams_cpu(features, net.weights, net.biases,
                                                       nn::Activation::tanh, layout)
                         : taylor::network_streams_per_layer(features, net.weights, net.biases,
                                                             nn::Activation::tanh, layout);
    auto grads = torch::autograd::grad({(out * weight).sum()}, parameters);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    grads.push_back(out.detach());
    last[variant] = grads;
    return ms;
  };
  for (int warm = 0; warm < 3; ++warm) run(0), run(1);
  std::vector<double> ms[2], ratio;
  for (int pair = 0; pair < pairs; ++pair) {
    const double node = run(0), layered = run(1);
    ms[0].push_back(node);
    ms[1].push_back(layered);
    ratio.push_back(layered / node);
  }
  double difference = 0;
  for (std::size_t k = 0; k < last[0].size(); ++k)
    difference = std::max(difference, (last[0][k] - last[1][k]).abs().max().item<double>());
  std::printf(
      "seed network, %lld points, float32, one thread, %d alternating pairs (forward + backward)\n",
      static_cast<long long>(points), pairs);
  std::printf("%-36s min %7.3f ms  median %7.3f ms\n", "whole-network node",
              *std::min_element(ms[0].begin(), ms[0].end()), median(ms[0]));
  std::printf("%-36s min %7.3f ms  median %7.3f ms\n", "per-layer path",
              *std::min_element(ms[1].begin(), ms[1].end()), median(ms[1]));
  std::printf(
      "per-layer / node: median of pair ratios %.2fx (largest difference in outputs and gradients "
      "%.1e)\n",
      median(ratio), difference);
  return 0;
}
