#pragma once
/// The pieces of case validation, one per file of src/io/case_validate_*.cpp. Internal to io.
/// Each reads its part of the document into `c` and throws KeyError on the first mistake; they
/// run in the order declared here, as later parts check names that earlier parts declare.
#include <string>
#include <vector>

#include "tessera/io/case.hpp"
#include "tessera/io/case_keys.hpp"
#include "tessera/io/case_reader.hpp"

namespace tessera::io::detail {

/// name, seed, dtype, device, constants, coordinates, time, fields, parameters; checks that all
/// symbols are distinct and none is built in.
void read_symbols(const JsonNode& root, Case& c);
/// geometry (dimensions against the coordinates; mesh paths resolved against the case folder).
void read_geometry(const JsonNode& root, Case& c);
/// equations, exact, reference.
void read_equations(const JsonNode& root, Case& c);
/// conditions.
void read_conditions(const JsonNode& root, Case& c);
/// decomposition, subdomains (after network: subdomain networks start from the global one).
void read_decomposition(const JsonNode& root, Case& c);
void read_subdomains(const JsonNode& root, Case& c);
/// network: the case's network and its warm start (network.init as an object).
void read_network_section(const JsonNode& root, Case& c);
/// A network object; keys it omits keep the values of `base`. `init` as an object (a warm
/// start) is refused: only the case-wide network takes it (read_network_section).
NetworkSpec read_network(const JsonNode& node, const NetworkSpec& base);
/// The network a case starts from before its "network" section (by decomposition method).
NetworkSpec default_network(const Case& c);
/// The fields written as {"name", "of"} against the rest of the case: not with fbpinn, equal
/// widths for the modified MLP, no exactly enforced condition on them.
void check_field_networks(const JsonNode& root, const Case& c);
/// training (stages, collocation, weights, ...).
void read_training(const JsonNode& root, Case& c);
/// output (directory defaults to "results/<name>").
void read_output(const JsonNode& root, Case& c);

/// `path` resolved against the case file's folder (absolute paths unchanged).
std::string resolve_against_case(const Case& c, const std::string& path);
/// The spatial coordinates followed by the time name when there is one.
std::vector<std::string> coordinates_and_time(const Case& c);

}  // namespace tessera::io::detail
