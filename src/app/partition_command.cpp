#include <iomanip>

#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/decomposition.hpp"
#include "tessera/app/evaluation.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/grid_output.hpp"

namespace tessera::app {

int partition_command(const CommandLine& line) {
  const auto comm = parallel::Communicator::world();
  Console console(comm.rank() == 0);
  const int ranks = line.ranks > 0 ? line.ranks : comm.size();
  const Setup setup = prepare(load(line), ranks);
  const auto& c = setup.input;
  const auto& problem = setup.problem;
  const auto& d = setup.decomposition;
  const auto& partition = d.partition;

  // The table of subdomains and interfaces on the console.
  {
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
    const auto owner = subdomain_in_domain(partition, *problem.domain, grid_points(layout));
    const auto* ids = owner.data_ptr<int64_t>();
    for (int64_t i = 0; i < owner.numel(); ++i) {
      if (ids[i] < 0) continue;  // outside an irregular domain: NaN and -1 in the file
      contribution.indices.push_back(i);
      contribution.subdomain.push_back(static_cast<int32_t>(ids[i]));
      contribution.fields["rank"].push_back(d.rank_of[ids[i]]);
    }
  } else {
    contribution.fields["rank"];
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
