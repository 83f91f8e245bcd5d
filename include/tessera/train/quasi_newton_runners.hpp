#pragma once
/// The quasi-Newton stage runners: per subdomain (L-BFGS everywhere; BFGS and SSBroyden where a
/// cut runs in time) and joint (BFGS and SSBroyden over subdomains coupled in space).
#include <functional>

#include "tessera/train/quasi_newton.hpp"
#include "tessera/train/stage_runner.hpp"

namespace tessera::train {

/// How a per-subdomain runner builds its optimizer and bounds one chunk of its iterations.
struct QuasiNewtonMethod {
  std::function<std::unique_ptr<torch::optim::Optimizer>(const StagePlan&,
                                                         std::vector<torch::Tensor>)>
      make;
  std::function<void(torch::optim::Optimizer&, int64_t chunk)> limit;
};

/// One optimizer per subdomain, run in chunks that end on log iterations and, when subdomains
/// are coupled, every few iterations: the neighbours' interface values are exchanged at the
/// start of a chunk and frozen during it. Frozen for a whole log interval, each side would
/// converge to the other's stale values instead of to a common solution. The optimizer's
/// history (or inverse Hessian) carries over between chunks.
class SubdomainQuasiNewtonRunner : public StageRunner {
 public:
  /// `exchanges`: whether any subdomain of the job has an interface.
  SubdomainQuasiNewtonRunner(const StageTools& tools, QuasiNewtonMethod method, bool exchanges)
      : tools_(tools), method_(std::move(method)), exchanges_(exchanges) {}
  void run(const StagePlan& stage, int64_t first_step) override;

 private:
  /// One chunk of `chunk` iterations of every owned subdomain's optimizer over `trained`.
  LocalLoss chunk(int64_t chunk, const std::vector<std::vector<torch::Tensor>>& trained);

  StageTools tools_;
  QuasiNewtonMethod method_;
  bool exchanges_;
};

/// BFGS or SSBroyden over subdomains coupled in space, with a dense inverse Hessian, or L-BFGS
/// (`memory` > 0 curvature pairs; joint_quasi_newton_runner.cpp).
class JointQuasiNewtonRunner : public StageRunner {
 public:
  JointQuasiNewtonRunner(const StageTools& tools, QuasiNewtonUpdate update, int64_t memory = 0)
      : tools_(tools), update_(update), memory_(memory) {}
  void run(const StagePlan& stage, int64_t first_step) override;

 private:
  StageTools tools_;
  QuasiNewtonUpdate update_;
  int64_t memory_;
};

}  // namespace tessera::train
