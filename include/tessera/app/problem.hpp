#pragma once
/// The problem a case describes, with every expression parsed and every name resolved: the
/// bridge from io::Case (text) to the modules that compute (geometry, physics, nn, train).
#include <memory>
#include <optional>

#include "tessera/expr/expression.hpp"
#include "tessera/geometry/domain.hpp"
#include "tessera/io/case.hpp"
#include "tessera/io/point_files.hpp"
#include "tessera/io/reference.hpp"
#include "tessera/physics/condition_group.hpp"
#include "tessera/physics/equation_group.hpp"
#include "tessera/physics/exact_conditions.hpp"
#include "tessera/physics/shared_parameters.hpp"

namespace tessera::app {

/// A `data` condition's observations (float64, CPU), checked to lie inside the domain; or a
/// dirichlet or residual condition at given points (`condition` set, no fields or values).
struct DataPlan {
  std::vector<int> fields;  ///< observed outputs, in the columns' order
  torch::Tensor points;     ///< [n, inputs]
  torch::Tensor values;     ///< [n, fields.size()]
  std::optional<physics::Condition> condition;
};

/// A condition with how it is sampled and weighted.
struct ConditionPlan {
  std::optional<physics::Condition> pointwise;  ///< every type but periodic and data
  std::optional<DataPlan> data;
  std::optional<std::pair<geometry::Selector, geometry::Selector>> periodic_faces;
  /// "enforce": "exact": the condition's distance and value, for the pointwise condition's
  /// field (its loss term stays, as a check that holds to rounding).
  std::optional<physics::ExactPiece> exact;
  std::string name;
  int64_t points = 0;
};

struct Problem {
  expr::SymbolTable symbols;
  std::shared_ptr<const geometry::Domain> domain;
  std::vector<physics::Equation> equations;
  /// fluxes[e][k]: equation e's flux along spatial axis k (cPINN); empty when not given.
  std::vector<std::vector<expr::Expression>> fluxes;
  std::vector<ConditionPlan> conditions;
  std::map<std::string, expr::Expression> exact;  ///< field -> closed form
  std::optional<io::Reference> reference;         ///< field values on the reference grid
  std::optional<io::PointSet> output_points;      ///< output.points, read before training
  std::map<std::string, double> weights;  ///< term -> weight (case weights + training.weights)
  std::vector<std::string> term_names;    ///< equations, then conditions
  std::vector<physics::ParameterDefinition>
      parameters;  ///< trainable ones (fixed ones are constants)
  torch::Dtype dtype = torch::kFloat32;
  torch::Device device = torch::kCPU;
  geometry::SamplerKind sampler = geometry::SamplerKind::sobol;  ///< collocation and interfaces
};

/// Parses and resolves everything; errors name the case file and the key. `local_rank` as in
/// prepare().
Problem build_problem(const io::Case& c, int local_rank = 0);

/// The case's `device` for a rank with node-local rank `local_rank`: a CUDA device is the one
/// `cuda:N` pins, else the local rank modulo the visible devices. "cuda" without a GPU is an
/// error naming the key.
torch::Device resolve_device(const io::Case& c, int local_rank);

}  // namespace tessera::app
