#include <iomanip>
#include <tuple>

#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/decomposition.hpp"
#include "tessera/app/evaluation.hpp"
#include "tessera/app/model.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/grid_output.hpp"

namespace tessera::app {

namespace {

/// The overlapping subdomains of an fbpinn decomposition and their supports, level by level.
void print_supports(std::ostream& out, const Decomposition& d, const nn::FbpinnImpl& network) {
  const auto lower = network.support_lower(), upper = network.support_upper();
  out << "subdomain  level  support\n";
  int64_t id = 0;
  for (std::size_t level = 0; level < d.windows.size(); ++level)
    for (int64_t cell = 0; cell < d.windows[level].cells(); ++cell, ++id) {
      out << std::setw(9) << id << std::setw(7) << level << "  [";
      for (int64_t a = 0; a < lower.size(1); ++a)
        out << (a ? " x " : "") << d.partition.names()[a] << " " << lower[id][a].item<double>()
            << ".." << upper[id][a].item<double>();
      out << "]\n";
    }
}

/// At points x [n, dims]: the finest grid's cell holding each (per axis, how many of its inner
/// edges lie at or below the point), and how many supports over all levels hold it.
std::pair<torch::Tensor, torch::Tensor> cells_and_supports(const Decomposition& d,
                                                           const nn::FbpinnImpl& network,
                                                           const torch::Tensor& x) {
  const auto lower = network.support_lower(), upper = network.support_upper();
  auto supports = torch::zeros({x.size(0)}, torch::kLong);
  for (int64_t j = 0; j < network.subdomains(); ++j)
    supports += ((x >= lower[j]) & (x <= upper[j])).all(1).to(torch::kLong);
  auto cell = torch::zeros({x.size(0)}, torch::kLong);
  int64_t stride = 1;
  const auto& finest = d.windows.front().edges;
  for (std::size_t a = 0; a < finest.size(); ++a) {
    const std::vector<double> inner(finest[a].begin() + 1, finest[a].end() - 1);
    if (!inner.empty())
      cell += (x.select(1, static_cast<int64_t>(a)).unsqueeze(1) >=
               torch::tensor(inner, torch::kFloat64))
                  .sum(1) *
              stride;
    stride *= static_cast<int64_t>(finest[a].size()) - 1;
  }
  return {cell, supports};
}

}  // namespace

int partition_command(const CommandLine& line) {
  const auto comm = parallel::Communicator::world();
  Console console(comm.rank() == 0);
  const int ranks = line.ranks > 0 ? line.ranks : comm.size();
  const Setup setup = prepare(load(line), ranks);
  const auto& c = setup.input;
  const auto& problem = setup.problem;
  const auto& d = setup.decomposition;
  const auto& partition = d.partition;

  // An fbpinn's subdomains overlap: the table lists their supports, and the grid file shows
  // the finest cells and how many supports hold each point.
  std::shared_ptr<nn::FbpinnImpl> windows;
  if (!d.windows.empty()) {
    windows = nn::Fbpinn(fbpinn_options(c, problem, d)).ptr();
    console.out() << "case " << c.name << ": fbpinn, " << windows->subdomains()
                  << " overlapping subdomains on " << d.windows.size()
                  << " level(s), summed into one network; " << d.replicas
                  << " rank(s) train it on their shares of " << d.slices
                  << " slices of every point set\n";
    print_supports(console.out(), d, *windows);
  } else {
    std::ostream& out = console.out();
    out << "case " << c.name << ": " << io::name(d.method) << ", " << partition.size()
        << " subdomain(s) on " << ranks << " rank(s), " << partition.interfaces().size()
        << " interface(s)\n";
    out << "subdomain  rank  box\n";
    for (const auto& s : partition.subdomains()) {
      out << std::setw(9) << s.id << std::setw(6) << d.rank_of[s.id] << "  [";
      for (std::size_t i = 0; i < s.box.lo.size(); ++i)
        out << (i ? " x " : "") << partition.names()[i] << " " << s.box.lo[i] << ".."
            << s.box.hi[i];
      out << "]\n";
    }
    if (!partition.interfaces().empty()) out << "interface  lower  upper  at\n";
    for (const auto& f : partition.interfaces())
      out << std::setw(9) << f.id << std::setw(7) << f.lower << std::setw(7) << f.upper << "  "
          << partition.names()[f.axis] << " = " << f.position << "\n";
  }

  // The map as a grid file: subdomain and rank at every output grid point, for ParaView.
  io::ensure_output_directory(c.output.directory);
  const auto layout = output_grid(c, problem, &comm);
  io::GridContribution contribution;
  if (comm.rank() == 0) {
    const auto points = grid_points(layout);
    auto owner = subdomain_in_domain(partition, *problem.domain, points);
    torch::Tensor supports;
    if (windows) {
      const auto inside = owner >= 0;
      std::tie(owner, supports) = cells_and_supports(d, *windows, points.to(torch::kFloat64));
      owner.masked_fill_(inside.logical_not(), -1);
      supports = supports.to(torch::kFloat64).contiguous();
    }
    const auto* ids = owner.data_ptr<int64_t>();
    for (int64_t i = 0; i < owner.numel(); ++i) {
      if (ids[i] < 0) continue;  // outside an irregular domain: NaN and -1 in the file
      contribution.indices.push_back(i);
      contribution.subdomain.push_back(static_cast<int32_t>(ids[i]));
      contribution.fields["rank"].push_back(d.rank_of[windows ? 0 : ids[i]]);
      if (windows) contribution.fields["supports"].push_back(supports.data_ptr<double>()[i]);
    }
  } else {
    contribution.fields["rank"];
    if (windows) contribution.fields["supports"];
  }
  io::GridFileInfo info;
  info.case_name = c.name;
  info.attributes_double["ranks"] = ranks;
  const std::string stem = c.name + "_partition";
  io::write_grid_output(comm, c.output.directory, stem, layout, contribution, info);
  console.out() << "wrote " << c.output.directory << "/" << stem << ".xmf\n";
  return 0;
}

}  // namespace tessera::app
