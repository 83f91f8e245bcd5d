#include "tessera/app/memory_estimate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/app/model.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"

namespace tessera::app {
namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;

/// One contribution to the estimate, with the key a user changes to shrink it.
struct Share {
  std::string key;
  std::string what;
  double bytes = 0;
  std::string fix = "make it smaller or use more ranks";
};

int64_t subdomain_count(const io::Case& c) {
  double count = 1;
  for (const auto& [axis, pieces] : c.decomposition.split) count *= pieces;
  for (const auto& [axis, cuts] : c.decomposition.cuts)
    count *= static_cast<double>(cuts.size() + 1);
  return static_cast<int64_t>(std::min(count, 1e18));
}

double parameters(const io::NetworkSpec& network, std::size_t inputs, std::size_t outputs) {
  double total = 0, in = static_cast<double>(inputs);
  if (network.fourier_features) in = 2.0 * static_cast<double>(network.fourier_features->first);
  // The modified MLP's two encoders are two more first layers.
  if (network.architecture == io::ArchitectureChoice::modified_mlp)
    total += 2 * (in + 1) * static_cast<double>(network.hidden.front());
  for (int64_t width : network.hidden) total += (in + 1) * width, in = static_cast<double>(width);
  return total + (in + 1) * static_cast<double>(outputs);
}

}  // namespace

std::optional<double> cgroup_limit_value(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  if (!(in >> word) || word == "max" || word.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const double value = std::stod(word);
  // cgroup v1 writes "no limit" as the largest page-aligned 64-bit count.
  if (value >= 0x1p60) return std::nullopt;
  return value;
}

std::vector<std::string> cgroup_limit_files(const std::string& proc_self_cgroup) {
  std::vector<std::string> files;
  std::istringstream in(proc_self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    // "hierarchy:controllers:path": v2 is "0::/path", v1's memory controller "N:memory:/path".
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    const bool v2 = controllers.empty();
    if (!v2 && ("," + controllers + ",").find(",memory,") == std::string::npos) continue;
    const std::string root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
    const std::string name = v2 ? "/memory.max" : "/memory.limit_in_bytes";
    // The job's limit may sit on an ancestor of the task's group (Slurm: job, then step).
    while (true) {
      files.push_back(root + (path == "/" ? "" : path) + name);
      if (path.empty() || path == "/") break;
      path = path.substr(0, std::max<std::size_t>(path.rfind('/'), 1));
    }
  }
  return files;
}

namespace {

// The smallest limit of the control groups this process is in, if any.
std::optional<double> job_memory_limit() {
  std::ifstream self("/proc/self/cgroup");
  std::ostringstream groups;
  groups << self.rdbuf();
  std::optional<double> smallest;
  for (const auto& file : cgroup_limit_files(groups.str())) {
    std::ifstream in(file);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    if (const auto limit = cgroup_limit_value(text.str()))
      smallest = smallest ? std::min(*smallest, *limit) : *limit;
  }
  return smallest;
}

}  // namespace

double memory_limit_bytes() {
  if (const char* text = std::getenv("TESSERA_MEMORY_PER_RANK")) {
    const auto value = core::parse_byte_size(text);
    TESSERA_CHECK(value, "TESSERA_MEMORY_PER_RANK=" << text
                                                    << " is not a size; give bytes or a number "
                                                       "with K, M, G or T, e.g. 16G");
    return *value;
  }
  const double physical =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  const auto job = job_memory_limit();
  return job ? std::min(physical, *job) : physical;
}

namespace {

/// Whether any stage trains in float64 (its dtype or precision, or a dense quasi-Newton default).
bool any_float64_stage(const io::Case& c) {
  if (c.dtype == io::FloatType::float64) return true;
  for (const auto& stage : c.training.stages) {
    if (stage.precision) {
      if (*stage.precision == io::Precision::fp64) return true;
    } else if (stage.dtype) {
      if (*stage.dtype == io::FloatType::float64) return true;
    } else if (stage.optimizer->float64) {
      return true;
    }
  }
  return false;
}

/// A subdomain's point sets at their largest (the stages' and subdomains' own collocation
/// counts included): the collocation set, every condition's and the largest single set.
struct PointSets {
  double collocation = 0, conditions = 0, largest = 0;
};

PointSets point_sets(const io::Case& c) {
  PointSets sets;
  sets.collocation = static_cast<double>(c.training.collocation.points);
  for (const auto& stage : c.training.stages)
    if (stage.collocation_points)
      sets.collocation = std::max(sets.collocation, double(*stage.collocation_points));
  for (const auto& [id, override] : c.subdomains)
    if (override.collocation_points)
      sets.collocation = std::max(sets.collocation, double(*override.collocation_points));
  sets.largest = sets.collocation;
  for (const auto& condition : c.conditions) {
    sets.conditions += static_cast<double>(condition.points);
    sets.largest = std::max(sets.largest, static_cast<double>(condition.points));
  }
  return sets;
}

/// Parts per pass of the largest subdomain under training.batch (1 without it).
double parts_per_pass(const io::Case& c) {
  const double batch = static_cast<double>(batch_points(c));
  return batch > 0 ? std::max(1.0, std::ceil(point_sets(c).largest / batch)) : 1.0;
}

}  // namespace

double pass_bytes_per_point(const io::Case& c) {
  const double bytes = any_float64_stage(c) ? 8.0 : 4.0;
  const double dims = static_cast<double>(c.coordinates.size() + (c.time ? 1 : 0));
  double widths = 0;
  for (int64_t width : c.network.hidden) widths += static_cast<double>(width);
  // The modified MLP keeps its two encodings and each layer's gated mix besides.
  if (c.network.architecture == io::ArchitectureChoice::modified_mlp)
    widths *= 2, widths += 2.0 * static_cast<double>(c.network.hidden.front());
  const double streams = 1.0 + dims + dims * (dims + 1) / 2.0;
  return 3.0 * streams * widths * bytes;
}

int64_t batch_points(const io::Case& c) {
  const auto& batch = c.training.batch;
  if (batch.points > 0) return batch.points;
  if (!batch.memory_bytes) return 0;
  // A part holds its share of every set at once: the parts that fit the budget with all sets'
  // points, then the largest set's share of one part.
  const auto sets = point_sets(c);
  const double total = sets.collocation + sets.conditions;
  const double parts =
      std::max(1.0, std::ceil(total * pass_bytes_per_point(c) / *batch.memory_bytes));
  return std::max<int64_t>(1, static_cast<int64_t>(std::floor(sets.largest / parts)));
}

double gpu_memory_limit_bytes(double free_bytes, int ranks_sharing) {
  return free_bytes / std::max(1, ranks_sharing);
}

void check_memory_estimate(const io::Case& c, int ranks, double limit_bytes,
                           const geometry::Box& space, const std::string& limit_source) {
  const std::size_t dims = c.coordinates.size() + (c.time ? 1 : 0);
  const double subdomains = static_cast<double>(subdomain_count(c));
  const double per_rank = std::ceil(subdomains / std::max(1, ranks));
  // Networks and point passes per rank. An fbpinn's windows are one model on one rank (group):
  // all its networks live there, and a point meets at most two supports along each cut
  // coordinate on every level (overlap <= 1).
  double networks = per_rank, passes = per_rank;
  if (c.decomposition.method == io::DecompositionMethod::fbpinn) {
    const auto cut_axes = [](const std::map<std::string, int>& split) {
      double meets = 1;
      for (const auto& [axis, pieces] : split) meets *= pieces > 1 ? 2 : 1;
      return meets;
    };
    std::map<std::string, int> finest = c.decomposition.split;
    for (const auto& [axis, cuts] : c.decomposition.cuts)
      finest[axis] = static_cast<int>(cuts.size()) + 1;
    networks = subdomains, passes = cut_axes(finest);
    for (const auto& level : c.decomposition.levels) {
      double cells = 1;
      for (const auto& [axis, pieces] : level) cells *= pieces;
      networks += cells, passes += cut_axes(level);
    }
  }

  // Per subdomain: weights with their gradients and two Adam moments (float64 at worst, the
  // quasi-Newton stages' type), and the forward pass's saved values: every collocation or
  // condition point carries the value and its first and second derivatives (1 + d + d(d+1)/2
  // streams) through every hidden layer, kept for the backward pass with the tanh derivatives.
  // A field of some inputs has a network of its own instead of an output of the main one.
  const auto subdomain_parameters = [&](const io::NetworkSpec& network) {
    const std::size_t whole = c.fields.size() - c.field_inputs.size();
    double total = whole > 0 ? parameters(network, dims, whole) : 0.0;
    for (const auto& [field, spec] : c.field_inputs) {
      io::NetworkSpec own = network;
      own.hidden = spec.hidden.value_or(network.hidden);
      total += parameters(own, spec.of.size(), 1);
    }
    return total;
  };
  double widest_parameters = subdomain_parameters(c.network);
  for (const auto& [id, override] : c.subdomains)
    if (override.network)
      widest_parameters = std::max(widest_parameters, subdomain_parameters(*override.network));
  // A pass in parts (training.batch, or an fbpinn's slices) holds one part of every set at a
  // time.
  const auto sets = point_sets(c);
  double parts = parts_per_pass(c);
  if (c.decomposition.method == io::DecompositionMethod::fbpinn)
    parts = std::max<double>(parts, fbpinn_slices(c.decomposition, ranks));
  const double points = sets.collocation / parts, condition_points = sets.conditions / parts;
  const double saved = pass_bytes_per_point(c);

  // BFGS and SSBroyden keep a dense inverse Hessian: a subdomain's rows of the joint matrix over
  // all subdomains (the default where they fit 4 GiB), or its own block.
  // The limited-memory methods keep 2 x history vectors of the parameters per network, and
  // the pairs' products (4 x history^2 doubles) per network and once more for the joint search.
  double hessian = 0;
  for (const auto& stage : c.training.stages) {
    const auto pairs = static_cast<double>(stage.history);
    if (stage.optimizer->takes("history"))
      hessian = std::max(hessian, 2.0 * pairs * widest_parameters * networks * 8 +
                                      4.0 * pairs * pairs * (networks + 1) * 8);
    if (!stage.optimizer->dense_hessian) continue;
    const double model = widest_parameters * (networks / per_rank);
    const double block = model * model * 8;
    // A block above the limit is refused by plan_dense_hessians(), naming the stage.
    if (block > dense_hessian_limit_bytes) continue;
    const double joint_rows =
        c.decomposition.method == io::DecompositionMethod::fbpinn ? block : block * subdomains;
    const bool joint = stage.hessian ? *stage.hessian == io::HessianLayout::joint
                                     : joint_rows <= dense_hessian_limit_bytes;
    hessian = std::max(hessian, per_rank * (joint ? joint_rows : block));
  }
  std::vector<Share> shares{
      {"network.hidden", "networks and optimizer state",
       networks * widest_parameters * 4 * 8 + hessian},
      {"training.collocation.points", "collocation points through the network",
       passes * points * saved},
      {"conditions[].points", "condition points through the network",
       passes * condition_points * saved},
  };
  double grid = 0;
  if (!c.output.grid.empty()) {
    grid = 1;
    for (const auto& [axis, count] : c.output.grid) grid *= static_cast<double>(count);
  }
  shares.push_back({"output.grid", "output grid (coordinates and fields)",
                    grid * static_cast<double>(dims + c.fields.size()) * 8});
  if (c.output.mesh_max_cell_size && space.dims() > 0) {
    // A mesh of cells of size h has about two nodes per h^d of the domain's bounding box; the
    // mesher keeps a few hundred bytes per node, the fields eight per value and output time.
    const double h = *c.output.mesh_max_cell_size;
    const double nodes = 2.0 * space.measure() / std::pow(h, space.dims());
    const double times = c.time ? static_cast<double>(c.output.mesh_times) : 1.0;
    const double values = static_cast<double>(dims + c.fields.size() + c.equations.size());
    shares.push_back(
        {"output.mesh.max_cell_size",
         "the output mesh (about " + std::to_string(static_cast<int64_t>(std::min(nodes, 1e18))) +
             " nodes)",
         nodes * (512.0 + times * values * 8),
         "make the cells larger (rank 0 meshes the whole domain, every rank keeps the mesh)"});
  }
  if (subdomains > 1)
    shares.push_back(
        {"decomposition.split", "the partition and its interfaces",
         subdomains * (4096.0 + 2.0 * dims * c.decomposition.interface.points * dims * 8)});

  double total = 0;
  for (const auto& s : shares) total += s.bytes;
  if (total <= limit_bytes) return;
  const auto largest =
      *std::max_element(shares.begin(), shares.end(),
                        [](const Share& a, const Share& b) { return a.bytes < b.bytes; });
  const auto in_gib = [](double b) {
    std::ostringstream text;
    text.setf(std::ios::fixed);
    text.precision(b < 10 * gib ? 1 : 0);
    text << b / gib;
    return text.str();
  };
  TESSERA_FAIL(c.file << ": " << largest.key << ": the run would need about " << in_gib(total)
                      << " GiB per rank, " << in_gib(largest.bytes) << " GiB of it for "
                      << largest.what << " (" << static_cast<int64_t>(per_rank)
                      << " subdomain(s) per rank on " << ranks << " rank(s)"
                      << (subdomains > 1 ? " from decomposition.split" : "")
                      << "), above the limit of " << in_gib(limit_bytes) << " GiB (" << limit_source
                      << "); " << largest.fix);
}

}  // namespace tessera::app
