// The forward engine's CPU kernels against plain references: the vectorised tanh against
// std::tanh, the register-tiled products against torch::matmul, and the whole-network node
// against the per-layer path (matrix products and the generic element-wise step).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <ATen/Dispatch.h>
#include "../../src/autodiff/kernels/elementwise.hpp"
#include "../../src/autodiff/kernels/gemm.hpp"
#include "../../src/autodiff/kernels/tanh.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/torch_pch.hpp"

using namespace tessera;
using namespace tessera::autodiff;

namespace {

// |a - b| in units in the last place of b.
template <typename T>
double ulps(T a, T b) {
  const T spacing = std::nextafter(std::abs(b), std::numeric_limits<T>::infinity()) - std::abs(b);
  return std::abs(static_cast<double>(a) - static_cast<double>(b)) / static_cast<double>(spacing);
}

template <typename T>
double worst_tanh_ulps() {
  std::vector<T> z;
  for (int i = -400000; i <= 400000; ++i) z.push_back(static_cast<T>(i * 5e-5));  // [-20, 20]
  for (double tiny : {1e-30, 1e-10, 1e-5, 3e-3}) z.insert(z.end(), {T(tiny), T(-tiny)});
  for (double big : {30.0, 90.0, 400.0, 1e4, 1e30}) z.insert(z.end(), {T(big), T(-big)});
  z.push_back(T(0));
  std::vector<T> out(z.size());
  taylor::detail::tanh_into(z.data(), out.data(), static_cast<int64_t>(z.size()));
  double worst = 0;
  for (std::size_t i = 0; i < z.size(); ++i) worst = std::max(worst, ulps(out[i], std::tanh(z[i])));
  return worst;
}

}  // namespace

TEST_CASE("vectorised tanh is within 4 ulp of std::tanh in float32 and float64") {
  const double single = worst_tanh_ulps<float>(), twice = worst_tanh_ulps<double>();
  MESSAGE("worst error: float32 " << single << " ulp, float64 " << twice << " ulp");
  CHECK(single <= 4);
  CHECK(twice <= 4);
}

namespace {

// Elements per kernel vector (kernels/gemm.hpp) and the products' tolerance per summed term.
int64_t kernel_lanes(torch::Dtype dtype) {
  return dtype == torch::kFloat64 ? taylor::detail::lanes<double>()
                                  : taylor::detail::lanes<float>();
}

double product_tolerance(torch::Dtype dtype) { return dtype == torch::kFloat64 ? 1e-12 : 1e-4; }

}  // namespace

TEST_CASE("the products run the kernel set TESSERA_CPU_KERNELS asks for") {
  MESSAGE("kernel set: " << std::string(taylor::detail::cpu_kernels()));
  if (const char* asked = std::getenv("TESSERA_CPU_KERNELS"); asked && *asked)
    CHECK(std::string(taylor::detail::cpu_kernels()) == asked);
}

TEST_CASE("register-tiled products equal torch::matmul for every remainder of rows and vectors") {
  torch::manual_seed(3);
  for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const int64_t lanes = kernel_lanes(dtype);
    const double tolerance = product_tolerance(dtype);
    for (int64_t rows : {1, 4, 5, 6, 7, 13})
      for (int64_t vectors : {1, 2, 3, 4, 7})
        for (int64_t steps : {1, 9, 50}) {
          CAPTURE(rows);
          CAPTURE(vectors);
          CAPTURE(steps);
          const int64_t width = vectors * lanes;
          const auto b = torch::randn({steps, width}, dtype), bias = torch::randn({rows}, dtype);
          // a . b with a [rows, steps] read row by row (+ a bias per row), then a^T . b with
          // a [steps, rows] read column by column.
          const auto a = torch::randn({rows, steps}, dtype),
                     at = torch::randn({steps, rows}, dtype);
          auto c = torch::randn({rows, width}, dtype);
          const auto start = c.clone();
          auto d = torch::empty({rows, width}, dtype);
          AT_DISPATCH_FLOATING_TYPES(dtype, "test_gemm", [&] {
            taylor::detail::gemm(rows, vectors, steps, a.data_ptr<scalar_t>(), steps, 1,
                                 b.data_ptr<scalar_t>(), width, c.data_ptr<scalar_t>(), width,
                                 /*accumulate=*/true, bias.data_ptr<scalar_t>());
            taylor::detail::gemm(rows, vectors, steps, at.data_ptr<scalar_t>(), 1, rows,
                                 b.data_ptr<scalar_t>(), width, d.data_ptr<scalar_t>(), width,
                                 /*accumulate=*/false, static_cast<const scalar_t*>(nullptr));
          });
          CHECK((c - (start + torch::matmul(a, b) + bias.unsqueeze(1))).abs().max().item<double>() <
                tolerance * steps);
          CHECK((d - torch::matmul(at.t(), b)).abs().max().item<double>() < tolerance * steps);
        }
  }
}

TEST_CASE("lane-wise products sum to a . b^T over sets, for every remainder of rows and columns") {
  torch::manual_seed(5);
  for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const int64_t lanes = kernel_lanes(dtype);
    const double tolerance = product_tolerance(dtype);
    for (int64_t rows : {1, 3, 4, 5, 9, 13})
      for (int64_t cols : {1, 2, 5, 6, 11})
        for (int64_t vectors : {1, 3})
          for (int64_t sets : {1, 3}) {
            CAPTURE(rows);
            CAPTURE(cols);
            CAPTURE(vectors);
            CAPTURE(sets);
            const int64_t length = vectors * lanes;
            const auto a = torch::randn({sets, rows, length}, dtype),
                       b = torch::randn({sets, cols, length}, dtype);
            auto partial = torch::randn({rows, cols, lanes}, dtype);
            const auto start = partial.clone();
            const auto lane_products = [&](bool accumulate) {
              AT_DISPATCH_FLOATING_TYPES(dtype, "test_gemm_lanes", [&] {
                using taylor::detail::contiguous;
                taylor::detail::gemm_lanes(
                    rows, cols, vectors, sets,
                    contiguous<const scalar_t*>(a.data_ptr<scalar_t>(), rows * length), length,
                    contiguous<const scalar_t*>(b.data_ptr<scalar_t>(), cols * length), length,
                    partial.data_ptr<scalar_t>(), accumulate);
              });
            };
            lane_products(/*accumulate=*/true);
            const auto expected = torch::matmul(a, b.transpose(1, 2)).sum(0);
            const double scale = tolerance * static_cast<double>(sets * length);
            CHECK(((partial - start).sum(2) - expected).abs().max().item<double>() < scale);
            lane_products(/*accumulate=*/false);
            CHECK((partial.sum(2) - expected).abs().max().item<double>() < scale);
          }
  }
}

TEST_CASE(
    "whole-network CPU node equals the per-layer path over many blocks, forward and backward") {
  torch::manual_seed(4);
  taylor::StreamLayout layout;  // 3 inputs: value, 3 firsts, 3 seconds, 2 Laplacians
  layout.axes = {0, 1, 2};
  layout.pairs = {{0, 0}, {0, 2}, {1, 1}};
  layout.laplacians = {{0, 1, 2}, {0, 2}};
  // Up to 16 inputs the first layer's pre-activations are recomputed in the backward, from 17
  // they are saved like the other layers'; also no hidden layer and a single hidden layer.
  const std::vector<std::vector<int64_t>> shapes{
      {5, 12, 10, 9, 2}, {5, 50, 50, 1}, {20, 16, 7}, {16, 9, 3}, {17, 9, 3}, {5, 16, 7}, {5, 1}};
  const nn::Activation activations[] = {nn::Activation::tanh, nn::Activation::sin,
                                        nn::Activation::gelu, nn::Activation::silu};
  for (auto dtype : {torch::kFloat64, torch::kFloat32})
    for (const auto& widths : shapes)
      for (auto activation : activations) {
        CAPTURE(widths.size());
        CAPTURE(static_cast<int>(activation));
        std::vector<torch::Tensor> weights, biases;
        for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
          weights.push_back(
              (torch::randn({widths[l + 1], widths[l]}, dtype) / std::sqrt(double(widths[l])))
                  .requires_grad_(true));
          biases.push_back((0.3 * torch::randn({widths[l + 1]}, dtype)).requires_grad_(true));
        }
        // 1,001 points: many blocks and a short last one.
        const auto features = torch::randn({layout.count(), 1001, widths[0]}, dtype);
        const auto weight = torch::randn({layout.count(), 1001, widths.back()}, dtype);
        std::vector<torch::Tensor> parameters = weights;
        parameters.insert(parameters.end(), biases.begin(), biases.end());
        std::vector<torch::Tensor> results;
        for (bool fused : {true, false}) {
          const auto out =
              fused ? taylor::network_streams_cpu(features, weights, biases, activation, layout)
                    : taylor::network_streams_per_layer(features, weights, biases, activation,
                                                        layout, taylor::Kernel::generic);
          const auto grads = torch::autograd::grad({(out * weight).sum()}, parameters);
          results.push_back(out.detach());
          results.insert(results.end(), grads.begin(), grads.end());
        }
        const double tolerance = dtype == torch::kFloat64 ? 1e-12 : 2e-5;
        const std::size_t half = results.size() / 2;
        for (std::size_t k = 0; k < half; ++k) {
          CAPTURE(k);
          CHECK((results[k] - results[k + half]).abs().max().item<double>() <
                tolerance * (1 + results[k + half].abs().max().item<double>()));
        }
      }
}

TEST_CASE("the one-pass backward and output streams equal the two passes") {
  torch::manual_seed(9);
  taylor::StreamLayout layout;  // 3 inputs: value, 3 firsts, 3 seconds, 2 Laplacians
  layout.axes = {0, 1, 2};
  layout.pairs = {{0, 0}, {0, 2}, {1, 1}};
  layout.laplacians = {{0, 1, 2}, {0, 2}};
  const auto shape = taylor::detail::shape_of(layout);
  const int64_t K = layout.count(), count = 203;  // three strips of 64 and a short one
  const nn::Activation activations[] = {nn::Activation::tanh, nn::Activation::sin,
                                        nn::Activation::gelu, nn::Activation::silu};
  for (auto dtype : {torch::kFloat64, torch::kFloat32})
    for (auto activation : activations)
      for (bool write_value : {true, false}) {
        CAPTURE(static_cast<int>(activation));
        CAPTURE(write_value);
        const auto z = torch::randn({K, count}, dtype);
        const auto g = torch::randn({K, count}, dtype);
        const auto primitives = taylor::activation_primitives(activation, z[0]);
        std::vector<torch::Tensor> out;  // h and gz: two passes, then one
        for (int pass = 0; pass < 4; ++pass) out.push_back(torch::zeros({K, count}, dtype));
        AT_DISPATCH_FLOATING_TYPES(dtype, "one_pass_test", [&] {
          const auto prim = taylor::detail::pointers<scalar_t>(primitives);
          const auto* zp = z.data_ptr<scalar_t>();
          taylor::detail::streams_forward_range(activation, zp, count, prim, shape, count,
                                                out[0].data_ptr<scalar_t>(), count, write_value);
          taylor::detail::streams_backward_range(activation, zp, count, g.data_ptr<scalar_t>(),
                                                 prim, shape, count, out[1].data_ptr<scalar_t>(),
                                                 count);
          taylor::detail::streams_backward_and_forward_range(
              activation, zp, count, g.data_ptr<scalar_t>(), prim, shape, count,
              out[3].data_ptr<scalar_t>(), count, out[2].data_ptr<scalar_t>(), count, write_value);
        });
        // The same formulas; only the compiler's choice of which multiply to fuse into an add
        // may differ where the third derivative is formed too (seen for gelu): a rounding.
        const double tolerance = dtype == torch::kFloat64 ? 1e-13 : 1e-5;
        for (int k : {0, 1}) {
          CAPTURE(k);
          CHECK(out[k].abs().sum().item<double>() > 0);
          CHECK(((out[k] - out[k + 2]).abs() / (1 + out[k].abs())).max().item<double>() <
                tolerance);
        }
      }
}

TEST_CASE("the register kernels equal the strip loops for every shape they take") {
  torch::manual_seed(10);
  const int64_t count = 203;  // whole vectors of 4, 8 and 16 lanes and a short one
  for (auto dtype : {torch::kFloat64, torch::kFloat32})
    for (int64_t firsts = 0; firsts <= 3; ++firsts)
      for (int summed = 0; summed < (1 << firsts); ++summed)
        for (bool write_value : {true, false}) {
          CAPTURE(firsts);
          CAPTURE(summed);
          CAPTURE(write_value);
          taylor::detail::StreamShape shape;
          shape.firsts = firsts;
          if (summed) {
            shape.laplacians.emplace_back();
            for (int64_t a = 0; a < firsts; ++a)
              if ((summed >> a) & 1) shape.laplacians[0].push_back(a);
          }
          const int64_t K = 1 + firsts + (summed ? 1 : 0);
          const auto z = torch::randn({K, count}, dtype);
          const auto g = torch::randn({K, count}, dtype);
          const auto primitives = taylor::activation_primitives(nn::Activation::tanh, z[0]);
          // h, gz, then h and gz of the one pass: registers, then strips.
          std::vector<torch::Tensor> out;
          for (int k = 0; k < 8; ++k) out.push_back(torch::zeros({K, count}, dtype));
          AT_DISPATCH_FLOATING_TYPES(dtype, "registers_test", [&] {
            namespace d = taylor::detail;
            const auto prim = d::pointers<scalar_t>(primitives);
            const auto* zp = z.data_ptr<scalar_t>();
            const auto* gp = g.data_ptr<scalar_t>();
            const auto tanh = nn::Activation::tanh;
            const auto o = [&](int k) { return out[k].data_ptr<scalar_t>(); };
            CHECK(d::registers_forward_range(tanh, zp, count, prim, shape, count, o(0), count,
                                             write_value));
            CHECK(
                d::registers_backward_range(tanh, zp, count, gp, prim, shape, count, o(1), count));
            CHECK(d::registers_backward_and_forward_range(tanh, zp, count, gp, prim, shape, count,
                                                          o(3), count, o(2), count, write_value));
            d::strips_forward_range(tanh, zp, count, prim, shape, count, o(4), count, write_value);
            d::strips_backward_range(tanh, zp, count, gp, prim, shape, count, o(5), count);
            d::strips_backward_and_forward_range(tanh, zp, count, gp, prim, shape, count, o(7),
                                                 count, o(6), count, write_value);
          });
          for (int k = 0; k < 4; ++k) {
            CAPTURE(k);
            const bool empty_h = k % 2 == 0 && !write_value && firsts == 0;  // nothing to write
            if (!empty_h) CHECK(out[k].abs().sum().item<double>() > 0);
#if defined(__x86_64__)
            CHECK(torch::equal(out[k], out[k + 4]));  // the same bits
#else
            CHECK(((out[k] - out[k + 4]).abs() / (1 + out[k + 4].abs())).max().item<double>() <
                  (dtype == torch::kFloat64 ? 1e-13 : 1e-5));
#endif
          }
        }
}

TEST_CASE("the register kernels leave other activations and shapes to the strip loops") {
  namespace d = taylor::detail;
  const auto z = torch::randn({6, 16});
  std::vector<float> h(6 * 16);
  const auto prim = d::pointers<float>(taylor::activation_primitives(nn::Activation::tanh, z[0]));
  auto takes = [&](nn::Activation activation, const d::StreamShape& shape) {
    return d::registers_forward_range(activation, z.data_ptr<float>(), 16, prim, shape, 16,
                                      h.data(), 16, true);
  };
  d::StreamShape laplacian{2, {}, {{0, 1}}};
  CHECK(takes(nn::Activation::tanh, laplacian));
  CHECK_FALSE(takes(nn::Activation::sin, laplacian));
  CHECK_FALSE(takes(nn::Activation::tanh, d::StreamShape{2, {{0, 1}}, {}}));     // a pair
  CHECK_FALSE(takes(nn::Activation::tanh, d::StreamShape{2, {}, {{0}, {1}}}));   // two
  CHECK_FALSE(takes(nn::Activation::tanh, d::StreamShape{2, {}, {{1, 0}}}));     // descending
  CHECK_FALSE(takes(nn::Activation::tanh, d::StreamShape{4, {}, {{0, 1, 2}}}));  // four firsts
}

TEST_CASE("whole-network CPU node gives bit-identical results on 1, 2 and 3 threads") {
  // 2 inputs: the first layer recomputed in the backward; 20: saved.
  for (int64_t inputs : {2, 20}) {
    CAPTURE(inputs);
    torch::manual_seed(6);
    taylor::StreamLayout layout;  // 2-D Laplacian: value, 2 firsts, 1 Laplacian
    layout.axes = {0, 1};
    layout.laplacians = {{0, 1}};
    std::vector<torch::Tensor> weights, biases, parameters;
    const std::vector<int64_t> widths{inputs, 50, 50, 1};
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      weights.push_back((torch::randn({widths[l + 1], widths[l]}) / std::sqrt(double(widths[l])))
                            .requires_grad_(true));
      biases.push_back((0.3 * torch::randn({widths[l + 1]})).requires_grad_(true));
      parameters.push_back(weights.back());
      parameters.push_back(biases.back());
    }
    // 3,000 points: 32 blocks in 4 chunks, spread differently over each thread count.
    const auto features = torch::randn({layout.count(), 3000, inputs});
    const auto weight = torch::randn({layout.count(), 3000, 1});
    const int threads_before = torch::get_num_threads();
    std::vector<std::vector<torch::Tensor>> runs;
    for (int threads : {1, 2, 3}) {
      torch::set_num_threads(threads);
      const auto out =
          taylor::network_streams_cpu(features, weights, biases, nn::Activation::tanh, layout);
      auto grads = torch::autograd::grad({(out * weight).sum()}, parameters);
      grads.push_back(out.detach());
      runs.push_back(grads);
    }
    torch::set_num_threads(threads_before);
    for (std::size_t run = 1; run < runs.size(); ++run)
      for (std::size_t k = 0; k < runs[0].size(); ++k) {
        CAPTURE(run);
        CAPTURE(k);
        CHECK(torch::equal(runs[run][k], runs[0][k]));
      }
  }
}

TEST_CASE("a stream shape survives its encoding for autograd's saved data") {
  taylor::detail::StreamShape shape;
  shape.firsts = 3;
  shape.pairs = {{0, 0}, {0, 2}};
  shape.laplacians = {{0, 1, 2}, {1, 2}};
  const auto back = taylor::detail::decode(taylor::detail::encode(shape));
  CHECK(back.firsts == 3);
  CHECK(back.pairs == shape.pairs);
  CHECK(back.laplacians == shape.laplacians);
  auto truncated = taylor::detail::encode(shape);
  truncated.pop_back();
  CHECK_THROWS(taylor::detail::decode(truncated));
}
