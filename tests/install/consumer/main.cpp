// Loads a case through the installed library and prints what `tessera check` would count for
// its first subdomain: a check that the headers, the libraries and their dependencies link.
#include <iostream>

#include "tessera/app/setup.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/case.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tessera_consumer CASE.json\n";
    return 2;
  }
  try {
    const auto setup = tessera::app::prepare(tessera::io::load_case(argv[1]), /*ranks=*/1);
    const auto summary = tessera::app::check_models(setup);
    std::cout << "case " << setup.input.name << ": " << setup.decomposition.partition.size()
              << " subdomains, " << summary.parameters << " parameters per network\n";
  } catch (const tessera::Error& e) {
    std::cerr << "tessera_consumer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
