// The derivative streams' layout (which stream holds which partial) and its encoding for
// autograd's saved data, the partials read off a network's output streams, and the product rule
// on whole streams.
#include <algorithm>
#include <map>

#include "kernels/elementwise.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor {

int64_t StreamLayout::first_stream(int axis) const {
  const auto it = std::find(axes.begin(), axes.end(), axis);
  return it == axes.end() ? -1 : 1 + (it - axes.begin());
}

int64_t StreamLayout::second_stream(int i, int j) const {
  const int64_t a = first_stream(std::min(i, j)) - 1, b = first_stream(std::max(i, j)) - 1;
  if (a < 0 || b < 0) return -1;
  const auto it = std::find(pairs.begin(), pairs.end(), std::make_pair(int(a), int(b)));
  return it == pairs.end() ? -1 : 1 + static_cast<int64_t>(axes.size() + (it - pairs.begin()));
}

int64_t StreamLayout::laplacian_stream(const std::vector<int>& axes_summed) const {
  std::vector<int> positions;
  for (int axis : axes_summed) {
    const int64_t stream = first_stream(axis);
    if (stream < 0) return -1;
    positions.push_back(static_cast<int>(stream - 1));
  }
  std::sort(positions.begin(), positions.end());
  const auto it = std::find(laplacians.begin(), laplacians.end(), positions);
  return it == laplacians.end()
             ? -1
             : 1 + static_cast<int64_t>(axes.size() + pairs.size() + (it - laplacians.begin()));
}

int64_t StreamLayout::stream_of(const Partial& p) const {
  if (p.wrt.empty()) return 0;
  if (p.laplacian) return laplacian_stream(p.wrt);
  return p.wrt.size() == 1 ? first_stream(p.wrt[0]) : second_stream(p.wrt[0], p.wrt[1]);
}

StreamLayout stream_layout(const std::set<Partial>& requested) {
  std::set<int> axes;
  std::set<std::pair<int, int>> pairs;
  std::set<std::vector<int>> laplacians;
  for (const auto& p : requested) {
    TESSERA_CHECK(p.order() <= 2,
                  "forward engine: derivatives of order " << p.order() << " are not supported");
    axes.insert(p.wrt.begin(), p.wrt.end());
    if (p.laplacian)
      laplacians.insert(p.wrt);
    else if (p.wrt.size() == 2)
      pairs.insert({std::min(p.wrt[0], p.wrt[1]), std::max(p.wrt[0], p.wrt[1])});
  }
  StreamLayout layout;
  layout.axes.assign(axes.begin(), axes.end());
  for (const auto& [i, j] : pairs)
    layout.pairs.emplace_back(static_cast<int>(layout.first_stream(i) - 1),
                              static_cast<int>(layout.first_stream(j) - 1));
  for (const auto& summed : laplacians) {
    layout.laplacians.emplace_back();
    for (int axis : summed)
      layout.laplacians.back().push_back(static_cast<int>(layout.first_stream(axis) - 1));
    // laplacian_stream compares sorted positions
    std::sort(layout.laplacians.back().begin(), layout.laplacians.back().end());
  }
  return layout;
}

namespace detail {

StreamShape shape_of(const StreamLayout& layout) {
  StreamShape shape;
  shape.firsts = static_cast<int64_t>(layout.axes.size());
  for (const auto& [a, b] : layout.pairs) shape.pairs.emplace_back(a, b);
  for (const auto& summed : layout.laplacians)
    shape.laplacians.emplace_back(summed.begin(), summed.end());
  return shape;
}

std::vector<int64_t> encode(const StreamShape& shape) {
  std::vector<int64_t> code{shape.firsts, static_cast<int64_t>(shape.pairs.size())};
  for (const auto& [a, b] : shape.pairs) code.insert(code.end(), {a, b});
  code.push_back(static_cast<int64_t>(shape.laplacians.size()));
  for (const auto& summed : shape.laplacians) {
    code.push_back(static_cast<int64_t>(summed.size()));
    code.insert(code.end(), summed.begin(), summed.end());
  }
  return code;
}

StreamShape decode(const std::vector<int64_t>& code) {
  StreamShape shape;
  std::size_t at = 0;
  shape.firsts = code.at(at++);
  for (int64_t k = code.at(at++); k > 0; --k, at += 2)
    shape.pairs.emplace_back(code.at(at), code.at(at + 1));
  for (int64_t k = code.at(at++); k > 0; --k) {
    const auto size = static_cast<std::size_t>(code.at(at++));
    TESSERA_ASSERT(at + size <= code.size(), "taylor shape code: a Laplacian runs past the end");
    shape.laplacians.emplace_back(code.begin() + static_cast<std::ptrdiff_t>(at),
                                  code.begin() + static_cast<std::ptrdiff_t>(at + size));
    at += size;
  }
  return shape;
}

}  // namespace detail

StreamLayout checked_layout(bool supported, const torch::Tensor& x, int64_t inputs,
                            const std::set<Partial>& requested) {
  TESSERA_CHECK(supported,
                "forward engine: a requested partial has order > 2 or names a missing output "
                "or input");
  TESSERA_ASSERT(x.dim() == 2 && x.size(1) == inputs,
                 "taylor_partials: x must be [n, " << inputs << "], got " << x.sizes());
  return stream_layout(requested);
}

Partials partials_from_streams(const torch::Tensor& out, const StreamLayout& layout,
                               const std::set<Partial>& requested) {
  // Split once (one backward node for all partials) rather than select each partial (two
  // nodes apiece, each zero-filling the whole output in the backward).
  const auto streams = out.unbind(0);
  const int64_t outputs = out.size(2);
  std::map<int64_t, std::vector<torch::Tensor>> columns;
  Partials result;
  for (const auto& p : requested) {
    const int64_t stream = layout.stream_of(p);
    TESSERA_ASSERT(stream >= 0, "forward engine: no stream holds a requested partial");
    const auto& s = streams[static_cast<std::size_t>(stream)];
    if (outputs == 1) {
      result[p] = s.reshape({s.size(0)});
      continue;
    }
    auto& split = columns[stream];
    if (split.empty()) split = s.unbind(1);
    result[p] = split[static_cast<std::size_t>(p.output)];
  }
  return result;
}

torch::Tensor multiply_streams(const torch::Tensor& a, const torch::Tensor& b,
                               const StreamLayout& layout) {
  TESSERA_ASSERT(a.sizes() == b.sizes() && a.size(0) == layout.count(),
                 "multiply_streams: a and b must both be [" << layout.count() << ", n, width]");
  const auto a0 = a.narrow(0, 0, 1), b0 = b.narrow(0, 0, 1);
  const int64_t axes = static_cast<int64_t>(layout.axes.size());
  const int64_t second = layout.count() - 1 - axes;
  // Every derivative stream s has the part a_s b + a b_s: two broadcast products for all.
  const auto derivatives =
      a.narrow(0, 1, layout.count() - 1) * b0 + a0 * b.narrow(0, 1, layout.count() - 1);
  if (second == 0) return torch::cat({a0 * b0, derivatives});
  // Second-order streams add products of first derivatives:
  //   (ab)_ij = a_ij b + a_i b_j + a_j b_i + a b_ij,  (ab)_L = a_L b + 2 sum_i a_i b_i + a b_L.
  const auto first_a = a.narrow(0, 1, axes), first_b = b.narrow(0, 1, axes);
  std::vector<torch::Tensor> cross;
  for (const auto& [i, j] : layout.pairs)
    cross.push_back(i == j ? 2 * first_a[i] * first_b[i]
                           : first_a[i] * first_b[j] + first_a[j] * first_b[i]);
  for (const auto& positions : layout.laplacians) {
    auto sum = first_a[positions.front()] * first_b[positions.front()];
    for (std::size_t k = 1; k < positions.size(); ++k)
      sum = sum + first_a[positions[k]] * first_b[positions[k]];
    cross.push_back(2 * sum);
  }
  return torch::cat({a0 * b0, derivatives.narrow(0, 0, axes),
                     derivatives.narrow(0, axes, second) + torch::stack(cross)});
}

}  // namespace tessera::autodiff::taylor
