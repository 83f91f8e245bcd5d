// The switch to reproducible reductions: on for CUDA devices (with the cuBLAS workspace setting
// it needs, a user's own kept), untouched for the CPU.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <ATen/Context.h>

#include "tessera/core/determinism.hpp"

using namespace tessera;

TEST_CASE("the CPU keeps its kernels; a CUDA device turns deterministic reductions on") {
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
  at::globalContext().setDeterministicAlgorithms(false, false);

  CHECK_FALSE(core::make_reductions_deterministic(torch::Device(torch::kCPU)));
  CHECK_FALSE(at::globalContext().deterministicAlgorithms());
  CHECK(std::getenv("CUBLAS_WORKSPACE_CONFIG") == nullptr);

  // No GPU is needed to name one: the switch is process-wide state.
  CHECK(core::make_reductions_deterministic(torch::Device(torch::kCUDA, 0)));
  CHECK(at::globalContext().deterministicAlgorithms());
  CHECK(at::globalContext().deterministicAlgorithmsWarnOnly());
  REQUIRE(std::getenv("CUBLAS_WORKSPACE_CONFIG") != nullptr);
  CHECK(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")) == core::kCublasWorkspace);
  at::globalContext().setDeterministicAlgorithms(false, false);
}

TEST_CASE("a workspace setting the user chose is kept") {
  setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8", 1);
  CHECK(core::make_reductions_deterministic(torch::Device(torch::kCUDA, 1)));
  CHECK(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")) == ":16:8");
  at::globalContext().setDeterministicAlgorithms(false, false);
  unsetenv("CUBLAS_WORKSPACE_CONFIG");
}
