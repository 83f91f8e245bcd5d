#include "tessera/app/warm_start.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tessera/app/field_networks.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/case_options.hpp"
#include "tessera/io/checkpoint_files.hpp"
#include "tessera/nn/fbpinn.hpp"

namespace tessera::app {
namespace fs = std::filesystem;

namespace {

/// The network of subdomain `id`: the case's, or its own under `subdomains`.
const io::NetworkSpec& network_of(const io::Case& c, int id) {
  const auto it = c.subdomains.find(id);
  return it != c.subdomains.end() && it->second.network ? *it->second.network : c.network;
}

/// The key a person edits to change subdomain `id`'s network.
std::string network_key(const io::Case& c, int id) {
  const auto it = c.subdomains.find(id);
  return it != c.subdomains.end() && it->second.network
             ? "subdomains." + std::to_string(id) + ".network"
             : "network";
}

/// What fixes the shapes of a network's tensors and the function they compute, by the key that
/// sets it. The initialisation and the Fourier scale and factorisation spread only draw the
/// starting values, which the warm start replaces, so they may differ.
std::vector<std::pair<std::string, nlohmann::json>> architecture(const io::Case& c, int id) {
  const io::NetworkSpec& n = network_of(c, id);
  const std::string net = network_key(c, id);
  std::vector<std::string> inputs = c.coordinates;
  if (c.time) inputs.push_back(c.time->name);
  nlohmann::json periodic = nlohmann::json::array();
  for (const auto& condition : c.conditions)
    if (condition.type == io::ConditionKind::periodic && condition.exact)
      periodic.push_back(condition.axis);
  return {
      {"coordinates", inputs},
      {"fields", c.fields},
      {"fields[].of", field_inputs_record(c, n)},
      {net + ".architecture", io::name(n.architecture)},
      {net + ".hidden", n.hidden},
      {net + ".activation", io::name(n.activation)},
      {net + ".adaptive_activation",
       n.adaptive_scale ? nlohmann::json{{"scale", *n.adaptive_scale}} : nlohmann::json()},
      {net + ".fourier_features", n.fourier_features
                                      ? nlohmann::json{{"count", n.fourier_features->first}}
                                      : nlohmann::json()},
      {net + ".weight_factorization", static_cast<bool>(n.weight_factorization)},
      // Exact periodicity feeds cos and sin of the coordinate: another input layer.
      {"conditions[].enforce (exact periodic axes)", periodic},
  };
}

std::string shown(const nlohmann::json& value) { return value.is_null() ? "absent" : value.dump(); }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in.good()) return nullptr;
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

std::string subdomain_file(const std::string& checkpoint, int id) {
  return (fs::path(checkpoint) / ("subdomain_" + std::to_string(id) + ".pt")).string();
}

/// One clear line for a mistake in the warm start: the case file, the key and the fix.
[[noreturn]] void refuse(const io::Case& c, const std::string& key, const std::string& what) {
  TESSERA_FAIL(c.file << ": " << key << ": " << what);
}

/// The source's case, validated as this version reads cases.
io::Case source_case(const io::Case& c, const std::string& folder, const nlohmann::json& run) {
  const std::string file = run.value("case_file", folder + "/run.json");
  try {
    return io::case_from_json(run.at("case"), file);
  } catch (const std::exception& e) {
    refuse(c, "network.init.from",
           "the case recorded in '" + folder + "/run.json' does not read as a case: " + e.what());
  }
}

/// Which source subdomain each subdomain starts from (WarmStart::from_subdomain) and the words
/// for it; refuses counts that do not map.
std::pair<int, std::string> map_subdomains(const io::Case& c, int sources, int targets,
                                           bool fbpinn) {
  const auto plural = [](int n) { return std::to_string(n) + " subdomain" + (n == 1 ? "" : "s"); };
  const auto& spec = *c.warm_start;
  if (spec.subdomain) {
    const auto n = static_cast<int>(*spec.subdomain);
    if (n >= sources)
      refuse(c, "network.init.subdomain",
             std::to_string(n) + ", but the source has " + plural(sources) + " (ids 0 to " +
                 std::to_string(sources - 1) + "); pick one of those");
    if (fbpinn && n != 0)
      refuse(c, "network.init.subdomain",
             "an fbpinn run is one windowed sum (subdomain 0); remove the key");
    return {n, "subdomain " + std::to_string(n) + " copied into " + plural(targets)};
  }
  if (fbpinn) return {-1, "its fbpinn networks, in the same windows"};
  if (sources == targets)
    return {-1, targets == 1 ? "its one network"
                             : "subdomain k into subdomain k, for " + plural(targets)};
  if (sources == 1) return {0, "subdomain 0 copied into " + plural(targets)};
  refuse(c, "network.init.from",
         "the source has " + plural(sources) + " and this case " + plural(targets) +
             "; a warm start needs the same count, a source with one network (copied into every "
             "subdomain), or network.init.subdomain to pick the source subdomain they all start "
             "from");
}

}  // namespace

WarmStart plan_warm_start(const Setup& setup) {
  const io::Case& c = setup.input;
  if (!c.warm_start) return {};
  const std::string& folder = c.warm_start->directory;
  const std::string given =
      "'" + c.warm_start->from + "'" + (folder == c.warm_start->from ? "" : " (" + folder + ")");
  std::error_code error;
  if (!fs::is_directory(folder, error))
    refuse(c, "network.init.from",
           given +
               " is not a folder; give the output folder of a finished Tessera run "
               "(a relative path is taken from the case file's folder)");
  // A fresh run clears its own folder (--overwrite) before it would load from it.
  std::error_code output_error;
  if (fs::weakly_canonical(folder, error) ==
          fs::weakly_canonical(c.output.directory, output_error) &&
      !error && !output_error)
    refuse(c, "network.init.from",
           given +
               " is this run's own output.directory; continue a run with --restart, or "
               "write the new run into another folder");
  const nlohmann::json run = read_json(folder + "/run.json");
  if (!run.is_object() || !run.contains("case"))
    refuse(c, "network.init.from",
           given +
               " holds no readable run.json with the run's case; give the output folder of "
               "a Tessera run");
  const io::IntactCheckpoint newest = io::newest_intact_checkpoint(folder);
  if (newest.directory.empty())
    refuse(c, "network.init.from",
           given + " holds no complete, intact checkpoint" +
               (newest.skipped.empty()
                    ? std::string(" (none with its manifest.json: the run wrote none, or was "
                                  "ended while writing)")
                    : " (" + newest.skipped.front().reason + ")") +
               "; finish that run (tessera run --restart auto) or start from another");
  const nlohmann::json manifest = io::read_manifest(newest.directory);
  const io::Case source = source_case(c, folder, run);

  // The kind of network: one windowed fbpinn sum on each side, or plain networks on each.
  const bool fbpinn = !setup.decomposition.windows.empty();
  const bool source_fbpinn = manifest.contains("windows");
  if (fbpinn != source_fbpinn)
    refuse(c, "decomposition.method",
           fbpinn ? "copying a network into fbpinn's windowed subdomain networks is not "
                    "supported; warm-start from an fbpinn run with the same decomposition"
                  : "the source is an fbpinn run (a windowed sum of networks), which only an "
                    "fbpinn case with the same decomposition can start from");
  if (fbpinn) {
    nlohmann::json windows = nlohmann::json::array();
    for (const auto& level : setup.decomposition.windows) windows.push_back(level.cells());
    if (manifest["windows"] != windows || source.decomposition.overlap != c.decomposition.overlap)
      refuse(c, "decomposition",
             "the source's fbpinn windows (" + manifest["windows"].dump() + " per level, overlap " +
                 nlohmann::json(source.decomposition.overlap).dump() +
                 ") differ from this case's (" + windows.dump() + ", overlap " +
                 nlohmann::json(c.decomposition.overlap).dump() +
                 "); an fbpinn warm start needs the same decomposition");
  }

  WarmStart plan;
  plan.checkpoint = newest.directory;
  const int sources = manifest.at("subdomains").get<int>();
  const int targets = setup.decomposition.partition.size();
  std::string mapping;
  std::tie(plan.from_subdomain, mapping) = map_subdomains(c, sources, targets, fbpinn);

  // Every subdomain against the source subdomain it starts from; one line for the first
  // difference, with both values.
  for (int id = 0; id < targets; ++id) {
    const int from = plan.source_of(id);
    const auto mine = architecture(c, id);
    const auto theirs = architecture(source, from);
    for (std::size_t k = 0; k < mine.size(); ++k)
      if (mine[k].second != theirs[k].second)
        refuse(c, mine[k].first,
               "network.init.from needs the source's architecture: its subdomain " +
                   std::to_string(from) + " has " + shown(theirs[k].second) +
                   ", this case's subdomain " + std::to_string(id) + " has " +
                   shown(mine[k].second) + "; make them equal, or start from another run");
  }
  plan.description = "from " + plan.checkpoint + " (" + mapping + ")";
  if (run.value("status", "") != "completed")
    plan.description += "; the source run is " + run.value("status", std::string("unfinished")) +
                        ", its newest checkpoint is used";
  bool trainable = false;
  for (const auto& [name, parameter] : c.parameters) trainable = trainable || parameter.trainable;
  if (trainable) plan.description += "; trainable parameters start from their initial values";
  return plan;
}

WarmStart plan_warm_start(const parallel::Communicator& comm, const Setup& setup) {
  if (!setup.input.warm_start) return {};
  nlohmann::json shared;
  if (comm.rank() == 0) {
    const WarmStart plan = plan_warm_start(setup);
    shared = {{"checkpoint", plan.checkpoint},
              {"from", plan.from_subdomain},
              {"description", plan.description}};
  }
  shared = nlohmann::json::parse(comm.broadcast_from_root(shared.dump()));
  WarmStart plan;
  plan.checkpoint = shared.at("checkpoint").get<std::string>();
  plan.from_subdomain = shared.at("from").get<int>();
  plan.description = shared.at("description").get<std::string>();
  return plan;
}

namespace {

/// `into`'s tensors from the archive of the same network, converted to their dtype and device,
/// and its member networks' (nn::FieldNetworks) from their archives within it. A tensor the
/// archive lacks or holds in another shape is an error naming both shapes.
void copy_network(torch::serialize::InputArchive& archive, torch::nn::Module& into,
                  const std::string& file) {
  torch::NoGradGuard no_grad;
  for (auto& child : into.named_children()) {
    torch::serialize::InputArchive part;
    TESSERA_CHECK(archive.try_read(child.key(), part),
                  "network.init.from: '" << file << "' holds no network '" << child.key()
                                         << "'; start from a run of this architecture");
    copy_network(part, *child.value(), file);
  }
  const bool fbpinn = dynamic_cast<nn::FbpinnImpl*>(&into) != nullptr;
  const auto copy = [&](const std::string& name, torch::Tensor& target, bool buffer) {
    torch::Tensor value;
    TESSERA_CHECK(archive.try_read(name, value, buffer),
                  "network.init.from: '" << file << "' holds no tensor '" << name
                                         << "' for this network; start from a run of this "
                                            "architecture");
    TESSERA_CHECK(value.sizes() == target.sizes(),
                  "network.init.from: '" << file << "' holds '" << name << "' of shape "
                                         << value.sizes() << ", this network's is "
                                         << target.sizes()
                                         << "; start from a run of this architecture");
    value = value.to(target.device(), target.scalar_type());
    // The windows of fbpinn are where this case's points are: they must be the source's.
    TESSERA_CHECK(!(fbpinn && buffer) || torch::equal(value, target),
                  "decomposition: the fbpinn windows in '"
                      << file << "' (" << name
                      << ") differ from this case's; an fbpinn warm start needs the same domain "
                         "and decomposition");
    target.copy_(value);
  };
  for (auto& item : into.named_parameters(/*recurse=*/false)) copy(item.key(), item.value(), false);
  // Buffers too: an MLP's input normalisation (the source's box) and Fourier matrix belong to
  // the function it learnt, so a network copied into a smaller subdomain computes that function.
  for (auto& item : into.named_buffers(/*recurse=*/false)) copy(item.key(), item.value(), true);
}

}  // namespace

void apply_warm_start(const WarmStart& plan, const RankModels& rank, const torch::Device& device,
                      Console& console) {
  if (!plan.on()) return;
  for (auto* model : rank.owned()) {
    const std::string file = subdomain_file(plan.checkpoint, plan.source_of(model->id));
    torch::serialize::InputArchive archive, network;
    try {
      archive.load_from(file, device);
      archive.read("network", network);
    } catch (const c10::Error& e) {
      TESSERA_FAIL("network.init.from: checkpoint file '"
                   << file << "' cannot be read: " << e.what_without_backtrace());
    }
    copy_network(network, *model->network, file);
  }
  if (console.root()) console.out() << "tessera: network.init: " << plan.description << "\n";
}

}  // namespace tessera::app
