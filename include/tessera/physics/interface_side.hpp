#pragma once
/// One subdomain's side of an interface: the quantities it sends to its neighbour and the
/// interface losses it computes from the neighbour's (detached) values (XPINN, cPINN).
#include <functional>
#include <optional>
#include <vector>

#include "tessera/core/rng.hpp"

#include "tessera/physics/equation_group.hpp"
#include "tessera/physics/loss_group.hpp"

namespace tessera::physics {

/// Interface loss weights; a term with weight 0 is not computed (nor its data sent).
struct InterfaceWeights {
  double continuity = 0;  ///< solution average: |u - (u + u_other) / 2|^2
  double residual = 0;    ///< residual continuity: |r - r_other|^2 for every equation
  double flux = 0;        ///< normal flux continuity (cPINN): |F.n - F_other.n|^2
  double gradient = 0;    ///< normal derivative continuity: |du/dn - du_other/dn|^2
};

/// Names of the interface loss terms as history.jsonl reports them.
inline const char* continuity_term = "continuity";
inline const char* residual_term = "residual_jump";
inline const char* flux_term = "flux";
inline const char* gradient_term = "gradient";

/// The interface terms present for these weights, in a fixed order.
std::vector<std::string> interface_term_names(const InterfaceWeights& weights);

class InterfaceSide {
 public:
  /// `points` [n, inputs] on the facet normal to input `axis` (all of them: this side keeps
  /// `replica`'s slice, and the matching replica of the neighbour keeps the same rows);
  /// `fields` unknowns; `fluxes[e][k]` is equation e's flux along spatial axis k (cPINN; may be
  /// empty otherwise).
  InterfaceSide(int interface_id, int side, int axis, const torch::Tensor& points, int fields,
                std::vector<Equation> equations, std::vector<std::vector<expr::Expression>> fluxes,
                InterfaceWeights weights, int spatial_dims, Replica replica = {});

  int interface_id() const { return interface_id_; }
  /// 0: the lower subdomain, 1: the upper.
  int side() const { return side_; }
  int64_t point_count() const { return points_.size(0); }
  /// Whether the interface is a cut in time (information flows from the earlier side only).
  bool across_time() const { return axis_ >= spatial_dims_; }
  /// Values per point this side sends (and receives): fields, residuals, fluxes, gradients.
  int64_t quantities() const;

  /// This side's quantities at part `chunk` of the interface points: [rows, quantities()].
  torch::Tensor local_values(const FieldEvaluator& fields, bool create_graph,
                             const Chunk& chunk = {}) const;
  /// What local_values asks of the fields, and the values from the environment it gets back
  /// (for evaluating several sides' fields together).
  FieldRequest request(const FieldEvaluator& fields, const Chunk& chunk = {}) const;
  torch::Tensor values_from(const expr::Environment& env) const;

  /// One interface term: the squared jump of columns [start, start + width) of the values,
  /// times `scale` before squaring, summed over those columns and averaged over the points.
  struct TermColumns {
    const char* name;
    int64_t start, width;
    double scale;
  };
  /// This side's terms in the order losses() gives them (none on the earlier side of a cut in
  /// time, which does not feel the later one).
  std::vector<TermColumns> term_columns() const;
  /// The TermValue of term `name` on part `chunk` of this side's points, from its mean square
  /// and its scaled jump there ([rows, width]).
  TermValue term(const char* name, torch::Tensor mean_square, const torch::Tensor& jump,
                 const Chunk& chunk = {}) const;
  /// This side's share of a term's mean over the whole interface (its replica's points over
  /// all points; 1 without replicas).
  double share() const;
  /// The interface terms from this side's values (with graph) and the neighbour's (detached),
  /// both on part `chunk` of the points.
  std::vector<TermValue> losses(const torch::Tensor& local, const torch::Tensor& remote,
                                const Chunk& chunk = {}) const;
  /// Sum over points and fields of (u - u_other)^2 (for the interface_jump metric), as a
  /// float64 scalar tensor on the values' device: read only when a record is logged, so the
  /// iterations between never wait for it.
  torch::Tensor squared_jump(const torch::Tensor& local, const torch::Tensor& remote) const;
  std::set<expr::DerivativeKey> derivatives() const;
  /// Holds the interface points in `dtype` from now on (both sides convert alike); with a
  /// redraw they are drawn again from where they came from, so a restart gets the same points.
  void set_dtype(torch::Dtype dtype);

  /// Draws every point of the interface from a stream.
  using PointDraw = std::function<torch::Tensor(core::Rng&)>;
  /// Makes resample() redraw with `draw` from `stream`, which must be where the current points
  /// were drawn from (they are drawn again from it here). Both sides get the same stream and redraw
  /// at the same iterations, so their points stay identical without sending coordinates.
  void set_redraw(PointDraw draw, const core::Rng& stream);
  /// New points, like a loss group's resample (no change without set_redraw).
  void resample();
  /// Where the current points were drawn from (for checkpoints), and redrawing from there.
  std::optional<core::Rng::State> sample_origin() const;
  void resample_from(const core::Rng::State& origin);

 private:
  /// Column blocks of the values: fields | residuals | fluxes | gradients.
  struct Layout {
    int64_t fields, residuals, fluxes, gradients;
    int64_t residual_start() const { return fields; }
    int64_t flux_start() const { return fields + residuals; }
    int64_t gradient_start() const { return fields + residuals + fluxes; }
    int64_t total() const { return fields + residuals + fluxes + gradients; }
  };
  Layout layout() const;

  int interface_id_, side_, axis_;
  Replica replica_;
  torch::Tensor points_;  ///< this replica's slice
  int64_t all_points_;    ///< points of the whole interface
  PointDraw draw_;
  core::Rng stream_{0, 0, ""};
  core::Rng::State origin_;
  int fields_;
  std::vector<Equation> equations_;
  std::vector<std::vector<expr::Expression>> fluxes_;
  InterfaceWeights weights_;
  int spatial_dims_;
};

}  // namespace tessera::physics
