#pragma once
/// What a derivative engine is asked for: partial derivatives of network outputs with respect
/// to network inputs.
#include <torch/types.h>

#include <functional>
#include <map>
#include <set>
#include <vector>

namespace tessera::autodiff {

/// d^k output / d input[wrt[0]] ... d input[wrt[k-1]]; `wrt` sorted ascending (derivatives of
/// smooth networks commute); empty `wrt` is the output value itself.
/// With `laplacian`: the sum of the pure second derivatives along each input in `wrt`
/// (ascending, each once).
struct Partial {
  int output = 0;
  std::vector<int> wrt;
  bool laplacian = false;
  int order() const { return laplacian ? 2 : static_cast<int>(wrt.size()); }
  bool operator<(const Partial& other) const {
    if (output != other.output) return output < other.output;
    if (laplacian != other.laplacian) return other.laplacian;
    return wrt < other.wrt;
  }
  bool operator==(const Partial& other) const {
    return output == other.output && wrt == other.wrt && laplacian == other.laplacian;
  }
};

/// Each requested partial as a tensor [n].
using Partials = std::map<Partial, torch::Tensor>;

/// A network as a function: x [n, inputs] -> [n, outputs].
using NetworkFunction = std::function<torch::Tensor(const torch::Tensor&)>;

}  // namespace tessera::autodiff
