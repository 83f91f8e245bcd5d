// The trainer and its stage runners on a small objective: each of four subdomains fits its own
// network to a curve at fixed points (one `data` term). Checked: every runner lowers the loss
// and reports at log iterations; the job's history is the same bits on one rank and spread over
// the ranks; a stop is agreed by every rank; a run continued from its checkpoint gives the same
// bits as one never stopped. Run by CTest as
//   mpiexec.mpich -n 2 test_trainer
//   mpiexec.mpich -n 4 test_trainer
// (main: mpi_doctest.hpp).
#include <doctest/doctest.h>
#include <mpi.h>

#include <sstream>

#include "mpi_doctest.hpp"
#include "tessera/autodiff/reverse.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/nn/mlp.hpp"
#include "tessera/physics/data_group.hpp"
#include "tessera/train/adam_runner.hpp"
#include "tessera/train/loss_figures.hpp"
#include "tessera/train/quasi_newton_runners.hpp"
#include "tessera/train/trainer.hpp"

using namespace tessera;
using parallel::Communicator;

namespace {

constexpr int kSubdomains = 4;
const std::vector<std::string> kTerms = {"fit"};

/// Subdomain `id`: a 1 x 8 x 1 tanh network fitting sin(3x) + id/4 at 24 points of [id, id+1].
std::unique_ptr<train::SubdomainModel> fitting_model(int id) {
  auto model = std::make_unique<train::SubdomainModel>();
  model->id = id;
  nn::MlpOptions options;
  options.inputs = 1;
  options.hidden = {8};
  options.lower = {static_cast<double>(id)};
  options.upper = {static_cast<double>(id + 1)};
  options.subdomain = id;
  nn::Mlp network(options);
  network->to(torch::kFloat32);
  model->network = network.ptr();
  model->fields = std::make_unique<physics::FieldEvaluator>(
      [network](const torch::Tensor& x) mutable { return network->forward(x); },
      autodiff::reverse_partials);
  const auto x = torch::linspace(id, id + 1, 24, torch::kFloat64).unsqueeze(1);
  physics::PointOptions points;
  points.dtype = torch::kFloat32;
  model->groups.push_back(std::make_unique<physics::DataGroup>(
      "fit", std::vector<int>{0}, x, torch::sin(3 * x) + id / 4.0, points));
  return model;
}

/// The subdomains `ranks` ranks give rank `rank` (round robin), built afresh.
struct Share {
  std::vector<std::unique_ptr<train::SubdomainModel>> models;
  std::vector<train::SubdomainModel*> owned() const {
    std::vector<train::SubdomainModel*> pointers;
    for (const auto& m : models) pointers.push_back(m.get());
    return pointers;
  }
};

Share share_of(int rank, int ranks) {
  Share share;
  for (int id = rank; id < kSubdomains; id += ranks) share.models.push_back(fitting_model(id));
  return share;
}

train::StagePlan stage(const std::string& optimizer, int64_t iterations) {
  train::StagePlan s;
  s.optimizer = optimizer;
  s.iterations = iterations;
  s.lr = optimizer == "adam" ? 1e-2 : 1.0;
  s.warmup = optimizer == "adam" ? 5 : 0;
  s.tolerance = optimizer == "lbfgs" ? 1e-9 : 1e-12;
  return s;
}

train::TrainingPlan plan_of(std::vector<train::StagePlan> stages) {
  train::TrainingPlan plan;
  plan.stages = std::move(stages);
  plan.log_every = 10;
  return plan;
}

/// The logged losses of a run.
struct History {
  std::vector<double> losses;
  std::vector<int64_t> iterations;
  std::vector<std::string> stages;
};

train::TrainerCallbacks recording(History& history) {
  train::TrainerCallbacks callbacks;
  callbacks.on_log = [&history](const train::LogRecord& r) {
    history.losses.push_back(r.loss);
    history.iterations.push_back(r.iteration);
    history.stages.push_back(r.stage);
  };
  return callbacks;
}

History train_job(Communicator comm, Share& share, const train::TrainingPlan& plan) {
  History history;
  train::TrainingJob job;
  job.comm = comm;
  job.owned = share.owned();
  job.subdomains = kSubdomains;
  job.term_names = kTerms;
  train::Trainer trainer(std::move(job), plan, recording(history));
  trainer.run();
  return history;
}

/// A StageHost that counts and records, with a log every `log_every` iterations.
class RecordingHost : public train::StageHost {
 public:
  int64_t iteration() const override { return iteration_; }
  bool stopping() const override { return false; }
  int64_t iterations_to_log() const override { return log_every - iteration_ % log_every; }
  bool iterations_done(int64_t n, int64_t, const train::LocalLoss& loss, const std::string& stage,
                       double lr) override {
    iteration_ += n;
    if (iteration_ % log_every != 0) return false;
    logged.push_back({iteration_, stage, lr});
    return true;
  }
  void skip(int64_t n) override { iteration_ += n, skipped += n; }
  void count_adam_step() override { ++adam_steps; }
  void adopt(std::vector<torch::optim::Optimizer*> optimizers, bool shared_last) override {
    adopted = optimizers.size();
  }

  struct Entry {
    int64_t iteration;
    std::string stage;
    double lr;
  };
  int64_t log_every = 10;
  std::vector<Entry> logged;
  int64_t adam_steps = 0, skipped = 0;
  std::size_t adopted = 0;

 private:
  int64_t iteration_ = 0;
};

/// The parts a runner works with, over this rank's share of the job on `comm`.
struct Bench {
  Bench(Communicator comm, int rank, int ranks)
      : share(share_of(rank, ranks)),
        reduction(
            train::Reduction::choose(comm, kSubdomains, share.owned(), kTerms, {}, times.sync_s)),
        objective(share.owned(), kTerms, {}, {}, nullptr, *reduction, 0, nullptr, iteration),
        points(share.owned(), plan, *reduction),
        tools{objective, *reduction, host, points, guard, sync, times, {}} {}

  /// The job-wide loss of the current parameters. Collective.
  double loss() {
    const auto figures = objective.figures();
    train::LogRecord record;
    train::reduce_loss_figures(figures, kTerms, objective.weights(), *reduction, record);
    return record.loss;
  }

  Share share;
  train::TrainingTimes times;
  std::unique_ptr<train::Reduction> reduction;
  int64_t iteration = 0;
  train::Objective objective;
  train::TrainingPlan plan = plan_of({});
  train::PointPlacement points;
  RecordingHost host;
  train::DivergenceGuard guard;
  train::GradientSync sync;
  train::StageTools tools;
};

}  // namespace

TEST_CASE("the Adam runner lowers the loss and logs every log iteration at its scheduled rate") {
  const auto world = Communicator::world();
  Bench bench(world, world.rank(), world.size());
  const double before = bench.loss();
  const auto adam = stage("adam", 40);
  train::AdamRunner runner(bench.tools);
  runner.run(adam, 0);
  CHECK(bench.host.adam_steps == 40);
  CHECK(bench.host.adopted == bench.share.models.size());
  REQUIRE(bench.host.logged.size() == 4);
  for (const auto& entry : bench.host.logged) {
    CHECK(entry.stage == "adam");
    CHECK(entry.lr == train::scheduled_lr(adam, entry.iteration - 1));
  }
  CHECK(bench.loss() < before);
}

TEST_CASE("the per-subdomain quasi-Newton runner ends its chunks on log iterations") {
  const auto world = Communicator::world();
  Bench bench(world, world.rank(), world.size());
  const double before = bench.loss();
  const auto lbfgs = stage("lbfgs", 25);
  auto runner = train::make_runner(lbfgs, bench.tools);
  runner->run(lbfgs, 0);
  // 25 iterations: logs at 10 and 20, then a last chunk of 5.
  REQUIRE(bench.host.logged.size() == 2);
  CHECK(bench.host.logged[0].iteration == 10);
  CHECK(bench.host.logged[1].iteration == 20);
  CHECK(bench.host.iteration() == 25);
  CHECK(bench.host.adam_steps == 0);
  CHECK(bench.loss() < 0.5 * before);
}

TEST_CASE("the joint quasi-Newton runner minimises the sum, dense or on curvature pairs") {
  const auto world = Communicator::world();
  // Dense BFGS and L-BFGS on 10 pairs, each as one inverse Hessian over the whole vector and
  // as one per subdomain ("hessian": "blocks").
  for (int64_t memory : {0, 10})
    for (bool joint : {true, false}) {
      CAPTURE(memory);
      CAPTURE(joint);
      Bench bench(world, world.rank(), world.size());
      const double before = bench.loss();
      auto finish = stage("bfgs", 80);
      finish.joint_hessian = joint;
      train::JointQuasiNewtonRunner runner(bench.tools, train::QuasiNewtonUpdate::bfgs, memory);
      runner.run(finish, 0);
      // A converged stage still counts its iterations.
      CHECK(bench.host.iteration() == 80);
      CHECK(bench.loss() < 1e-2 * before);
      // The same search on one rank holding every subdomain takes the same steps.
      Bench alone(Communicator::self(), 0, 1);
      train::JointQuasiNewtonRunner single(alone.tools, train::QuasiNewtonUpdate::bfgs, memory);
      single.run(finish, 0);
      CHECK(alone.host.skipped == bench.host.skipped);
      CHECK(alone.loss() == bench.loss());
    }
}

TEST_CASE("a job's history is the same bits on one rank and spread over the ranks") {
  const auto world = Communicator::world();
  const auto plan = plan_of({stage("adam", 30), stage("lbfgs", 10), stage("ssbroyden", 10)});
  auto spread = share_of(world.rank(), world.size());
  const auto many = train_job(world, spread, plan);
  auto whole = share_of(0, 1);
  const auto one = train_job(Communicator::self(), whole, plan);
  CHECK(many.losses == one.losses);
  CHECK(many.iterations == one.iterations);
  // Three Adam logs, one per quasi-Newton stage, the final record.
  CHECK(many.stages ==
        std::vector<std::string>{"adam", "adam", "adam", "lbfgs", "ssbroyden", "ssbroyden"});
  CHECK(many.losses.back() < many.losses.front());
}

TEST_CASE("every rank stops at the same log iteration and the run continues to the same bits") {
  const auto world = Communicator::world();
  auto plan = plan_of({stage("adam", 30), stage("lbfgs", 20)});
  plan.checkpoint_every = 10;
  auto straight_share = share_of(world.rank(), world.size());
  const auto straight = train_job(world, straight_share, plan);

  // Stopped by a time limit only rank 0 sees: every rank stops at the first log iteration.
  History first;
  std::string checkpoint;
  train::CheckpointPosition position;
  {
    auto share = share_of(world.rank(), world.size());
    auto callbacks = recording(first);
    callbacks.on_checkpoint = [&](train::CheckpointState& state) {
      position = state.position;
      std::ostringstream bytes;
      torch::serialize::OutputArchive all;
      for (auto& [id, archive] : state.subdomains) all.write(std::to_string(id), *archive);
      all.save_to(bytes);
      checkpoint = bytes.str();
    };
    auto stopping = plan;
    if (world.rank() == 0) stopping.time_limit = 0.0;
    train::TrainingJob job{world, share.owned(), kSubdomains, kTerms, nullptr, {}};
    train::Trainer trainer(std::move(job), stopping, callbacks);
    trainer.run();
    CHECK(trainer.stop_reason() == "time_limit");
    CHECK(trainer.iterations_done() == 10);
  }
  CHECK(position.iteration == 10);

  // Continued from the checkpoint with fresh networks: the rest of the straight run's history.
  History rest;
  auto share = share_of(world.rank(), world.size());
  train::RestoredCheckpoint restored;
  restored.position = position;
  std::istringstream bytes(checkpoint);
  torch::serialize::InputArchive all;
  all.load_from(bytes);
  for (auto* model : share.owned()) {
    auto archive = std::make_shared<torch::serialize::InputArchive>();
    all.read(std::to_string(model->id), *archive);
    restored.subdomains[model->id] = archive;
  }
  train::TrainingJob job{world, share.owned(), kSubdomains, kTerms, nullptr, {}};
  train::Trainer trainer(std::move(job), plan, recording(rest));
  trainer.resume(std::move(restored));
  trainer.run();
  REQUIRE(first.losses.size() + rest.losses.size() == straight.losses.size() + 1);
  CHECK(first.losses.front() == straight.losses.front());
  CHECK(std::vector<double>(straight.losses.begin() + 1, straight.losses.end()) == rest.losses);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  torch::set_num_threads(1);
  const int status = run_doctest_on_all_ranks(argc, argv, "test_trainer");
  MPI_Finalize();
  return status;
}
