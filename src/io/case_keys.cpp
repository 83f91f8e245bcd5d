#include "tessera/io/case_keys.hpp"

#include "tessera/core/error.hpp"
#include "tessera/io/case_options.hpp"

namespace tessera::io {

const std::vector<KeyGroup>& case_key_groups() {
  static const std::vector<KeyGroup> groups = [] {
    std::vector<std::string> geometry = names_of<ShapeKind>();
    geometry.push_back("tags");
    return std::vector<KeyGroup>{
        {"",
         {"name",        "description", "seed",        "dtype",     "device",     "constants",
          "definitions", "data",        "coordinates", "time",      "fields",     "geometry",
          "equations",   "conditions",  "exact",       "reference", "parameters", "decomposition",
          "subdomains",  "network",     "training",    "output"}},
        {"time", {"name", "range"}},
        {"data.<name>", {"file", "dataset", "interpolation"}},
        {"fields[]", {"name", "of", "hidden"}},
        {"parameters.<name>", {"initial", "trainable", "positive"}},
        {"geometry", geometry},
        {"geometry.disk", {"center", "radius"}},
        {"geometry.ball", {"center", "radius"}},
        {"geometry.polygon", {"vertices", "holes"}},
        {"equations[]", {"name", "residual", "flux", "weight"}},
        {"conditions[]",
         {"name", "type", "on", "field", "value", "a", "b", "derivative", "axis", "file", "fields",
          "expression", "points", "weight", "enforce"}},
        {"conditions[].on", {"points"}},
        {"reference", {"file"}},
        {"decomposition",
         {"method", "split", "cuts", "balance", "interface", "ranks_per_subdomain", "overlap",
          "levels", "slices"}},
        {"decomposition.interface", {"points", "weights"}},
        {"decomposition.interface.weights", {"continuity", "residual", "flux", "gradient"}},
        {"subdomains.<id>", {"network", "collocation"}},
        {"subdomains.<id>.collocation", {"points"}},
        {"network",
         {"architecture", "hidden", "activation", "adaptive_activation", "fourier_features",
          "weight_factorization", "init"}},
        {"network.init", {"from", "subdomain"}},
        {"network.weight_factorization", {"mean", "std"}},
        {"network.adaptive_activation", {"scale"}},
        {"network.fourier_features", {"count", "scale"}},
        {"training",
         {"collocation", "derivatives", "stages", "weights", "causal", "log_every",
          "checkpoint_every", "time_limit", "batch", "budget"}},
        {"training.batch", {"points", "memory"}},
        {"training.collocation", {"points", "sampler", "resample_every", "adaptive"}},
        {"training.collocation.adaptive",
         {"every", "candidates", "exponent", "constant", "across_subdomains"}},
        {"training.causal", {"enabled", "chunks", "tolerance"}},
        {"training.stages[]",
         {"optimizer", "iterations", "lr", "decay", "warmup", "clip", "points", "history",
          "scaling", "tolerance", "dtype", "precision", "hessian"}},
        {"training.stages[].decay", {"rate", "every"}},
        {"training.weights", {"adaptive", "adaptive_every", "adaptive_alpha"}},
        {"output", {"directory", "grid", "mesh", "every", "points"}},
        {"output.mesh", {"max_cell_size", "times"}},
    };
  }();
  return groups;
}

const std::vector<std::string>& keys_at(const char* path) {
  for (const auto& group : case_key_groups())
    if (group.path == path) return group.keys;
  TESSERA_UNREACHABLE("no key group '" << path << "' in case_key_groups()");
}

}  // namespace tessera::io
