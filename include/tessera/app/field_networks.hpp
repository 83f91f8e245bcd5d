#pragma once
/// The networks of a case whose fields include some of the inputs only ("fields": [{"name":
/// "a", "of": ["x", "y"]}]): nn::FieldNetworks built from a subdomain's MLP options, and its
/// derivative engine.
#include "tessera/io/case.hpp"
#include "tessera/nn/field_networks.hpp"
#include "tessera/physics/field_evaluator.hpp"

namespace tessera::app {

/// Whether some field takes some of the inputs only (then every subdomain's network is an
/// nn::FieldNetworks; otherwise the plain MLP of `network_options`).
bool has_field_networks(const io::Case& c);

/// Subdomain `whole.subdomain`'s networks: "main", the MLP of `whole` for the fields of every
/// input (absent when there are none), and "field_<name>" per field of some inputs: the same
/// architecture over its inputs (their box range and periodicity), one output, its own
/// `hidden` or `whole`'s, initialised from (seed, subdomain, "init:<name>").
nn::FieldNetworks field_networks(const io::Case& c, const nn::MlpOptions& whole);

/// Each part's partials from its own engine (the case's training.derivatives, as for a plain
/// MLP); zero along the inputs a part does not read (autodiff::parts_partials).
physics::DerivativeEngine field_networks_engine(const io::Case& c,
                                                const nn::FieldNetworks& networks);

/// The fields of some inputs as checkpoints and warm starts compare them: {field: {"of": [...],
/// "hidden": [...]}}, the widths resolved against `network` (the subdomain's network).
nlohmann::json field_inputs_record(const io::Case& c, const io::NetworkSpec& network);

}  // namespace tessera::app
