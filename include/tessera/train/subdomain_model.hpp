#pragma once
/// One subdomain's network, loss groups and interface sides, as the rank that trains it holds
/// them.
#include <memory>
#include <vector>

#include "tessera/nn/network.hpp"
#include "tessera/physics/field_evaluator.hpp"
#include "tessera/physics/interface_side.hpp"
#include "tessera/physics/loss_group.hpp"

namespace tessera::train {

struct SubdomainModel {
  int id = 0;
  std::shared_ptr<nn::Network> network;
  std::unique_ptr<physics::FieldEvaluator> fields;
  std::vector<std::unique_ptr<physics::LossGroup>> groups;
  std::vector<std::unique_ptr<physics::InterfaceSide>> interfaces;
  /// The neighbour's values for each interface side (same order), from the last exchange.
  std::vector<torch::Tensor> remote;
};

}  // namespace tessera::train
