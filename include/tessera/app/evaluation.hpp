#pragma once
/// Evaluating the trained networks: relative L2 errors during training and the output grid.
#include <functional>

#include "tessera/app/problem.hpp"
#include "tessera/app/rank_models.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/io/grid_output.hpp"
#include "tessera/parallel/environment.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::app {

/// Which subdomain each point belongs to: x [n, dims] float64 -> int64 [n].
using SubdomainOf = std::function<torch::Tensor(const torch::Tensor&)>;

/// The output grid: `output.grid` points per coordinate (default 101) over the domain's
/// bounding box; the reference's grid when there is a reference and no `output.grid`; with
/// `output.mesh`, a triangle / tetrahedral mesh of the shape (times: `output.mesh.times` values),
/// made on rank 0 of `comm` and shared (collective when comm is given).
io::GridLayout output_grid(const io::Case& c, const Problem& p,
                           const parallel::Communicator* comm = nullptr);

/// All points of a grid in flat order (first coordinate fastest): float64 [size, dims].
torch::Tensor grid_points(const io::GridLayout& layout);

class Evaluator {
 public:
  /// `subdomain_of`: the owner of each output point (-1: none, NaN in the output);
  /// `nearest_subdomain`: the owner of any point, for scattered reference points.
  Evaluator(parallel::Communicator comm, const Problem& problem,
            std::vector<train::SubdomainModel*> owned, SubdomainOf subdomain_of,
            SubdomainOf nearest_subdomain, int subdomains, io::GridLayout output);

  /// Relative L2 error per field with an exact solution or a reference, at the reference's
  /// points or else on the output grid, and over those fields stacked; global sums over ranks.
  /// Collective over comm.
  train::RelativeErrors relative_errors();

  /// The fields with an exact solution or reference that is zero at every error point (there
  /// is at least one): their relative error is undefined, so relative_errors leaves them out.
  /// Collective over comm.
  std::vector<std::string> fields_without_relative_error();

  /// This rank's part of the output file: fields, residual_<eq>, <field>_exact and
  /// <field>_error (when known on the output grid), subdomain.
  io::GridContribution output_contribution();

  /// The fields, then `expressions` of them (e.g. u_x or lap(u), as equations read them), at
  /// `points` [n, dims] float64: [n, fields + expressions] float64, the same on every rank. Each
  /// point is evaluated by the subdomain that owns it, as in the output file; a point that no
  /// subdomain owns is NaN. Collective over comm.
  torch::Tensor values_at(const torch::Tensor& points,
                          const std::vector<physics::Equation>& expressions = {});

  const io::GridLayout& layout() const { return output_; }

 private:
  /// Whether field f has an exact solution or a reference.
  bool known(std::size_t f) const;

  /// Network values at x (float64 [n, dims]) for subdomain `model`: float64 CPU [n, fields].
  torch::Tensor values(train::SubdomainModel& model, const torch::Tensor& x) const;

  /// `expressions` of the fields at x for subdomain `model`: float64 CPU [n, expressions].
  torch::Tensor expression_values(train::SubdomainModel& model, const torch::Tensor& x,
                                  const std::vector<physics::Equation>& expressions) const;

  parallel::Communicator comm_;
  const Problem& problem_;
  std::vector<train::SubdomainModel*> owned_;
  SubdomainOf subdomain_of_;
  SubdomainOf nearest_subdomain_;
  int subdomains_;
  io::GridLayout output_;
  // Error points owned by this rank, per owned subdomain (index into owned_), with exact values.
  std::vector<torch::Tensor> error_points_;
  std::vector<torch::Tensor> error_exact_;  // [n, fields] float64, NaN where unknown
};

/// The evaluator of a run: one replica per group evaluates the output and the errors (the
/// others add nothing). Grid points outside an irregular domain get no subdomain (NaN in the
/// output); mesh points all belong to the domain (its boundary as the mesher's chords), so
/// nothing is masked there. Collective over comm (the output mesh is made on rank 0).
Evaluator make_evaluator(const parallel::Communicator& comm, const Setup& setup,
                         const RankModels& rank);

/// An evaluator for values at given points (values_at) over `layout`; an empty layout (no
/// names) leaves it without error points, so relative_errors() is empty unless the problem has
/// a reference. With
/// `mask_outside`, points outside the domain get no subdomain (NaN), as on the output grid;
/// without, each point goes to the subdomain whose box is nearest, so that the networks extend
/// past a curved boundary (mesh nodes on chords). Collective over comm.
Evaluator point_evaluator(const parallel::Communicator& comm, const Setup& setup,
                          const RankModels& rank, io::GridLayout layout, bool mask_outside);

}  // namespace tessera::app
