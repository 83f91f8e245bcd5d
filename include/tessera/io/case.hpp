#pragma once
/// The validated contents of a case file (docs/case-format.md). Loading checks every
/// key's presence, type and range and rejects unknown keys; expressions stay text here and are
/// parsed (and their errors reported with the same keys) when the problem is built.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/io/case_options.hpp"
#include "tessera/io/optimizers.hpp"

namespace tessera::io {

/// An expression string with the key path it came from, e.g. "equations[0].residual".
struct ExpressionText {
  std::string text;
  std::string key;
};

/// One entry of "data": tabulated values that expressions call like a function.
struct DataSpec {
  std::string file;  ///< resolved against the case folder
  std::string dataset = "/values";
  InterpolationChoice interpolation = InterpolationChoice::linear;
};

struct TimeSpec {
  std::string name = "t";
  std::array<double, 2> range{0.0, 1.0};
};

/// One shape of "geometry", read fully (docs/case-format.md, "Geometry"); CSG shapes nest.
struct ShapeSpec {
  ShapeKind kind = ShapeKind::box;
  std::string key;  ///< its case-file key, for messages ("geometry.difference[1]")
  /// How "inside(<name>)" selectors name it: kind + depth-first count per kind ("disk0").
  std::string name;
  std::vector<std::array<double, 2>> box;       ///< interval: one entry; box: one per dimension
  std::vector<double> center;                   ///< disk (2), ball (3)
  double radius = 0.0;                          ///< disk, ball
  std::vector<std::array<double, 2>> vertices;  ///< polygon given inline
  std::vector<std::vector<std::array<double, 2>>> holes;  ///< polygon given inline
  std::string file;                 ///< mesh; polygon read from a file; resolved path
  std::vector<ShapeSpec> children;  ///< union, intersection, difference
};

/// "geometry": the top shape and its tags.
struct GeometrySpec {
  ShapeKind kind = ShapeKind::box;          // the top shape's kind
  std::vector<std::array<double, 2>> box;   // interval: one entry; box: one per dimension
  std::map<std::string, std::string> tags;  // tag name -> selector text ("x=0")
  nlohmann::json raw;                       // the shape's JSON, "mesh" paths resolved
  ShapeSpec shape;                          // the whole shape tree
  std::string key = "geometry";
};

struct EquationSpec {
  std::string name;
  ExpressionText residual;
  std::vector<ExpressionText> flux;  // cPINN flux components, one per spatial coordinate (optional)
  double weight = 1.0;
};

/// A condition of any type; which members are used depends on the type.
struct ConditionSpec {
  std::string name;
  ConditionKind type = ConditionKind::dirichlet;
  std::string on;  // selector text; "initial" for type initial, unused for periodic/data
  /// "on": {"points": [...]}: the fixed points (spatial coordinates, then time) a dirichlet or
  /// residual condition holds at, instead of a selector (then `on` is empty).
  std::vector<std::vector<double>> at_points;
  std::string field;                    // dirichlet, neumann, robin, initial
  std::optional<ExpressionText> value;  // dirichlet, neumann, robin, initial
  std::optional<ExpressionText> a, b;   // robin
  std::string derivative;  // initial: "" or the time name ("t") for an initial velocity
  bool exact = false;  // "enforce": "exact": dirichlet, initial u = g + phi N; periodic embedding
  std::string axis;    // periodic
  std::optional<ExpressionText> expression;  // residual
  std::string file;                          // data: resolved against the case file's folder
  std::vector<std::string> fields;           // data
  int64_t points = 256;
  double weight = 1.0;
  std::string key;  // "conditions[2]"
};

struct ParameterSpec {
  double initial = 0.0;
  bool trainable = true;
  bool positive = false;
};

struct InterfaceSpec {
  int64_t points = 128;
  std::map<std::string, double> weights;  // continuity, residual, flux, gradient
};

struct DecompositionSpec {
  DecompositionMethod method = DecompositionMethod::none;
  std::map<std::string, int> split;                 // coordinate -> pieces
  std::map<std::string, std::vector<double>> cuts;  // coordinate -> cut positions
  Balance balance = Balance::cuts;  // measure: recursive bisection into equal shares
  InterfaceSpec interface;
  int ranks_per_subdomain = 1;
  /// fbpinn: how far each cell's support reaches into its neighbours (fraction of its width).
  double overlap = 0.5;
  /// fbpinn: the coarser levels, each as pieces per coordinate (the finest is split/cuts).
  std::vector<std::map<std::string, int>> levels;
  /// fbpinn: how many fixed slices every point set is cut into; ranks share whole slices and
  /// sums run over slices in order (nullopt: 4, or the rank count when that is larger).
  std::optional<int> slices;
};

struct NetworkSpec {
  ArchitectureChoice architecture = ArchitectureChoice::mlp;
  std::vector<int64_t> hidden{50, 50, 50};
  ActivationChoice activation = ActivationChoice::tanh;
  std::optional<double> adaptive_scale;                           // adaptive_activation.scale
  std::optional<std::pair<int64_t, double>> fourier_features;     // (count, scale)
  std::optional<std::pair<double, double>> weight_factorization;  // (mean, std) of log scales
  InitChoice init = InitChoice::xavier_normal;
};

/// network.init as an object: the networks of a finished run as the starting point of this one
/// (docs/case-format.md, "Warm start"). Only the path is read here; app checks the folder.
struct WarmStartSpec {
  std::string from;       ///< as the case writes it
  std::string directory;  ///< `from` resolved against the case folder
  /// network.init.subdomain: the source subdomain every subdomain starts from; absent: the
  /// same subdomain, or the source's one network copied into every subdomain.
  std::optional<int64_t> subdomain;
};

/// A field whose network takes only some of the inputs ("fields": [{"name": "a", "of": ["x",
/// "y"]}]); its derivatives along the other inputs are zero.
struct FieldInputs {
  std::vector<std::string> of;  ///< the inputs, in input order (coordinates, then time)
  /// Hidden widths of the field's own network; absent: those of the subdomain's network.
  std::optional<std::vector<int64_t>> hidden;
  std::string key;  ///< "fields[1]", for messages
};

struct SubdomainOverride {
  std::optional<NetworkSpec> network;
  std::optional<int64_t> collocation_points;
};

/// training.collocation.adaptive: RAD (Wu et al. 2023), on unless the case says false.
struct AdaptiveSamplingSpec {
  int64_t every = 1000;
  int64_t candidates = 8;
  double exponent = 1.0;
  double constant = 1.0;
  bool across_subdomains = true;  ///< subdomains' point counts follow their residual
};

struct CollocationSpec {
  int64_t points = 2048;
  SamplerChoice sampler = SamplerChoice::sobol;
  int64_t resample_every = 100;  // 0: never
  /// Residual-based redistribution (RAD); nullopt: off (`"adaptive": false`).
  std::optional<AdaptiveSamplingSpec> adaptive = AdaptiveSamplingSpec{};
  bool adaptive_given = false;  ///< the case sets `adaptive` (else the default above)
};

struct DecaySpec {
  double rate = 1.0;
  int64_t every = 1000;
};

struct StageSpec {
  const OptimizerSpec* optimizer = &optimizers().front();  // a row of io/optimizers.hpp
  int64_t iterations = 1000;
  double lr = 1e-3;                               // absent: the optimizer's default
  std::optional<DecaySpec> decay;                 // adam; absent: the default decay
  std::optional<int64_t> warmup;                  // adam; absent: the default warm-up
  std::optional<double> clip;                     // adam: max global gradient norm
  int64_t history = 1000;                         // lbfgs
  HistoryScaling scaling = HistoryScaling::self;  // lbfgs
  double tolerance = 1e-9;                        // quasi-Newton: absent: the optimizer's default
  std::optional<FloatType> dtype;             // absent: float64 for bfgs/ssbroyden, else the run's
  std::optional<Precision> precision;         // absent: the dtype's plain products
  std::optional<HessianLayout> hessian;       // bfgs/ssbroyden; absent: joint where it fits
  std::optional<int64_t> collocation_points;  // optional per-stage point count
  std::string key;                            // "training.stages[1]"
};

struct WeightingSpec {
  std::map<std::string, double> fixed;  // term name -> weight
  WeightBalancing adaptive = WeightBalancing::grad_norm;
  int64_t adaptive_every = 100;  // how often grad_norm updates the weights
  double adaptive_alpha = 0.9;   // moving-average factor
};

/// training.causal: residual weights that open later times as earlier ones converge.
struct CausalSpec {
  std::optional<bool> enabled;  // absent: on when the problem has time
  int64_t chunks = 32;
  double tolerance = 1.0;
};

/// training.batch: gradient accumulation over parts of every point set.
struct BatchSpec {
  int64_t points = 0;                  ///< points per part (0: not given)
  std::optional<double> memory_bytes;  ///< or the memory a pass may hold, per rank
};

struct TrainingSpec {
  CollocationSpec collocation;
  BatchSpec batch;
  CausalSpec causal;
  DerivativeChoice derivatives = DerivativeChoice::automatic;
  std::vector<StageSpec> stages;
  WeightingSpec weights;
  int64_t log_every = 100;
  int64_t checkpoint_every = 0;      // 0: only at the end
  std::optional<double> time_limit;  // seconds
  /// training.budget (seconds of training): given instead of stages, which are then an Adam
  /// stage and a quasi-Newton finish whose iteration counts the run plans from the speeds it
  /// measures (app/budget_plan.hpp); `planned` once they are set.
  std::optional<double> budget;
  bool planned = false;
};

struct OutputSpec {
  std::string directory;                // resolved against the working directory
  std::map<std::string, int64_t> grid;  // coordinate (time included) -> points
  std::optional<double> mesh_max_cell_size;
  int64_t mesh_times = 11;  ///< output.mesh.times: time values written for space-time problems
  /// output.points: a points file (.h5 or .csv) at which the fields are also written,
  /// resolved against the case folder.
  std::optional<std::string> points_file;
};

struct Case {
  std::string file;          // path of the case file as given
  std::string folder;        // the case file's folder (relative paths resolve here)
  nlohmann::json effective;  // the document after --set overrides (for run.json)

  std::string name;
  /// "description": free text for people, one entry per line (a string is one line); it
  /// changes nothing a run computes.
  std::vector<std::string> description;
  uint64_t seed = 1234;
  FloatType dtype = FloatType::float32;
  DeviceChoice device = DeviceChoice::automatic;
  /// "cuda:N": every rank trains on CUDA device N (of those it sees); -1: by node-local rank.
  int device_index = -1;
  std::map<std::string, double> constants;
  /// Named expressions usable in every other expression (and in each other).
  std::map<std::string, ExpressionText> definitions;
  /// Tabulated data by name, read when the problem is built.
  std::map<std::string, DataSpec> data;
  std::vector<std::string> coordinates;
  std::optional<TimeSpec> time;
  std::vector<std::string> fields;
  /// The fields written as {"name", "of"}: field -> its inputs. Absent: every input.
  std::map<std::string, FieldInputs> field_inputs;
  GeometrySpec geometry;
  std::vector<EquationSpec> equations;
  std::vector<ConditionSpec> conditions;
  std::map<std::string, ExpressionText> exact;  // field -> expression
  std::optional<std::string> reference_file;    // resolved against the case folder
  std::map<std::string, ParameterSpec> parameters;
  DecompositionSpec decomposition;
  std::map<int, SubdomainOverride> subdomains;
  NetworkSpec network;
  std::optional<WarmStartSpec> warm_start;  ///< network.init {"from": ...}; absent: initialised
  TrainingSpec training;
  OutputSpec output;
};

/// Reads `path` (JSON with // and /* */ comments), applies the JSON merge patches (RFC 7386) in
/// the files `merges` in order, then `overrides` ("a.b.0.c=value", value parsed as JSON when it
/// parses, else a string; objects replaced, not merged) in order, and validates. Every error is
/// one line naming the file and the key, and the fix, e.g.
/// "cases/p.json: training.stages[0].iteratons: unknown key (did you mean 'iterations'?)"; a
/// value from a merge file or an override says so ("(from --merge 'fine.json')").
Case load_case(const std::string& path, const std::vector<std::string>& overrides = {},
               const std::vector<std::string>& merges = {});

/// The same from an already parsed document (tests). `file` names the case in messages, and its
/// folder is Case::folder, against which relative data, mesh and reference paths resolve.
Case case_from_json(nlohmann::json document, const std::string& file,
                    const std::vector<std::string>& overrides = {});

}  // namespace tessera::io
