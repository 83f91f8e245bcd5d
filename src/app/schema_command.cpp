// `tessera schema`: the case format as a JSON Schema, for editors and other tools.
#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/io/case_schema.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

int schema_command(const CommandLine&) {
  Console console(parallel::is_root());
  console.out() << io::case_schema().dump(2) << "\n";
  return 0;
}

}  // namespace tessera::app
