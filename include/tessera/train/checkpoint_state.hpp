#pragma once
/// A checkpoint in memory: where the trainer stands, and per subdomain an archive with its
/// network, optimizer, sampling and learning-rate state. The trainer fills and reads these;
/// the app writes and reads the files (docs/output-format.md, "Checkpoints").
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace tessera::train {

struct CheckpointPosition {
  int64_t iteration = 0;
  int64_t stage = 0;       ///< index of the stage to continue (== stage count: training done)
  int64_t stage_step = 0;  ///< iterations of that stage already done
  int64_t adam_steps = 0;
  double training_s = 0;  ///< training time up to here, over every run that led to it
  std::map<std::string, double> weights;  ///< loss weights (adaptive weighting moves them)
};

struct CheckpointState {
  CheckpointPosition position;
  /// Owned subdomains (replica 0 of each group writes them; the replicas hold the same state).
  std::map<int, std::shared_ptr<torch::serialize::OutputArchive>> subdomains;
  /// The shared parameters and their optimizer (identical on every rank; rank 0 writes them).
  std::shared_ptr<torch::serialize::OutputArchive> shared;
};

struct RestoredCheckpoint {
  CheckpointPosition position;
  std::map<int, std::shared_ptr<torch::serialize::InputArchive>> subdomains;  ///< owned ones
  std::shared_ptr<torch::serialize::InputArchive> shared;                     ///< null: none
};

}  // namespace tessera::train
