// "network" (and the networks of "subdomains", which start from it).
#include "tessera/io/case_detail.hpp"

namespace tessera::io::detail {

NetworkSpec default_network(const Case& c) {
  NetworkSpec net;
  // FBPINN subdomains are many and small: each learns a piece of the solution on its own
  // coordinates (Moseley et al. 2023 use two hidden layers of 16).
  if (c.decomposition.method == DecompositionMethod::fbpinn) net.hidden = {16, 16};
  return net;
}

NetworkSpec read_network(const JsonNode& node, const NetworkSpec& base) {
  node.check_object(keys_at("network"));
  NetworkSpec net = base;
  if (const JsonNode hidden = node["hidden"]; hidden.present()) {
    net.hidden.clear();
    for (const auto& width : hidden.elements(1, "layer width"))
      net.hidden.push_back(width.integer(1));
  }
  net.architecture = node["architecture"].option(net.architecture);
  if (net.architecture == ArchitectureChoice::modified_mlp)
    for (int64_t width : net.hidden)
      if (width != net.hidden.front())
        node["hidden"].fail(
            "the modified MLP mixes every hidden layer with encoders of one width, "
            "so all hidden widths must be equal; got " +
            std::to_string(net.hidden.front()) + " and " + std::to_string(width) +
            "; give every hidden layer the same width");
  net.activation = node["activation"].option(net.activation);
  if (const JsonNode adaptive = node["adaptive_activation"]; adaptive.present()) {
    adaptive.check_object(keys_at("network.adaptive_activation"));
    net.adaptive_scale = adaptive.required("scale", "\"scale\": 10").number(Range::positive);
  }
  if (const JsonNode fourier = node["fourier_features"]; fourier.present()) {
    fourier.check_object(keys_at("network.fourier_features"));
    const int64_t count = fourier.required("count", "\"count\": 64").integer(1);
    const double scale = fourier.required("scale", "\"scale\": 2").number(Range::positive);
    net.fourier_features = std::make_pair(count, scale);
  }
  if (const JsonNode factorization = node["weight_factorization"]; factorization.present()) {
    if (factorization.value().is_boolean()) {
      // true: the published defaults; false: a subdomain's way to turn off the case's choice.
      net.weight_factorization.reset();
      if (factorization.boolean()) net.weight_factorization = std::make_pair(1.0, 0.1);
    } else {
      factorization.check_object(keys_at("network.weight_factorization"));
      net.weight_factorization =
          std::make_pair(factorization["mean"].number(Range::any, 1.0),
                         factorization["std"].number(Range::non_negative, 0.1));
    }
  }
  if (const JsonNode init = node["init"]; init.present() && init.value().is_object())
    init.fail(
        "a warm start is given for the whole case, in network.init; here only "
        "\"xavier_normal\" or \"xavier_uniform\"");
  else if (init.present() && !init.value().is_string())
    init.fail("expected \"xavier_normal\", \"xavier_uniform\" or {\"from\": \"RUN_DIR\"}, got " +
              init.describe());
  else
    net.init = init.option(net.init);
  return net;
}

namespace {

/// network.init as an object: {"from": RUN_DIR, "subdomain": N}.
WarmStartSpec read_warm_start(const JsonNode& init, const Case& c) {
  init.check_object(keys_at("network.init"));
  WarmStartSpec w;
  const JsonNode from = init.required("from", "\"from\": \"results/<the source run>\"");
  w.from = from.string();
  if (w.from.empty()) from.fail("an empty folder name; give the output folder of a finished run");
  w.directory = resolve_against_case(c, w.from);
  if (const JsonNode subdomain = init["subdomain"]; subdomain.present())
    w.subdomain = subdomain.integer(0);
  return w;
}

}  // namespace

void read_network_section(const JsonNode& root, Case& c) {
  const NetworkSpec base = default_network(c);
  const JsonNode node = root["network"];
  if (!node.present()) {
    c.network = base;
    return;
  }
  // The warm start is read apart: a subdomain's network (read_network) cannot take one.
  JsonNode init = node["init"];
  if (init.present() && init.value().is_object()) {
    nlohmann::json rest = node.value();
    rest.erase("init");
    c.network = read_network(JsonNode(&rest, node.key()), base);
    c.warm_start = read_warm_start(init, c);
  } else {
    c.network = read_network(node, base);
  }
}

void check_field_networks(const JsonNode& root, const Case& c) {
  if (c.field_inputs.empty()) return;
  const auto nodes = root["fields"].elements();
  for (std::size_t k = 0; k < c.fields.size(); ++k) {
    const auto it = c.field_inputs.find(c.fields[k]);
    if (it == c.field_inputs.end()) continue;
    const JsonNode& node = nodes[k];
    if (c.decomposition.method == DecompositionMethod::fbpinn)
      node["of"].fail(
          "a field of some of the inputs has a network of its own, which the windowed sum of "
          "\"fbpinn\" does not have; write the field as a plain name (every input), or use "
          "\"xpinn\", \"cpinn\" or \"none\"");
    // The field's network takes the architecture of each subdomain's network.
    const auto check_widths = [&](const NetworkSpec& network) {
      if (!it->second.hidden || network.architecture != ArchitectureChoice::modified_mlp) return;
      for (int64_t width : *it->second.hidden)
        if (width != it->second.hidden->front())
          node["hidden"].fail("the modified MLP needs equal hidden widths, got " +
                              std::to_string(it->second.hidden->front()) + " and " +
                              std::to_string(width) +
                              "; give every hidden layer of this field's network the same width");
    };
    check_widths(c.network);
    for (const auto& [id, override] : c.subdomains)
      if (override.network) check_widths(*override.network);
    for (std::size_t i = 0; i < c.conditions.size(); ++i)
      if (c.conditions[i].exact && c.conditions[i].field == c.fields[k])
        root["conditions"].elements()[i]["enforce"].fail(
            "field '" + c.fields[k] + "' depends on some of the inputs only (" + node.key() +
            ".of), and u = g + phi N would make it depend on all of them; enforce this "
            "condition as a \"penalty\", or write the field as a plain name");
  }
}

}  // namespace tessera::io::detail
