#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "tessera/core/error.hpp"
#include "tessera/io/case.hpp"

using namespace tessera;
using namespace tessera::io;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A case that uses every top-level section (test_io_case_keys loads the example of
// docs/case-format.md itself).
const char* const kExample = R"JSON({
  "name": "poisson2d",
  "seed": 1234,
  "dtype": "float32",                 // float32 | float64
  "device": "auto",                   // auto | cpu | cuda  (auto: cuda when present)
  "constants": { "k": 1.0 },          // pi and e are built in
  "coordinates": ["x", "y"],          // 1 to 8 spatial coordinates, single identifiers
  // "time": { "name": "t", "range": [0, 1] },   // makes it a space-time problem
  "fields": ["u"],                    // unknowns; names without '_'
  "geometry": { "box": [[0, 1], [0, 1]] },
  "equations": [
    { "name": "poisson", "residual": "-k*lap(u) - 2*pi^2*sin(pi*x)*sin(pi*y)" }
  ],
  "conditions": [
    { "name": "walls", "type": "dirichlet", "on": "boundary", "field": "u", "value": "0", "points": 512 }
  ],
  "exact": { "u": "sin(pi*x)*sin(pi*y)" },
  "decomposition": {
    "method": "xpinn",
    "split": { "x": 2, "y": 2 },
    "interface": { "points": 128, "weights": { "continuity": 20, "residual": 1 } }
  },
  "network": { "hidden": [50, 50, 50], "activation": "tanh" },
  "training": {
    "collocation": { "points": 2048, "sampler": "sobol", "resample_every": 100 },
    "stages": [
      { "optimizer": "adam", "iterations": 4000, "lr": 1e-3, "decay": { "rate": 0.9, "every": 1000 } },
      { "optimizer": "lbfgs", "iterations": 500 }
    ],
    "log_every": 100
  },
  "output": { "directory": "results/poisson2d", "grid": { "x": 201, "y": 201 } }
})JSON";

// The smallest valid case; tests patch it.
json minimal() {
  return json::parse(R"({
    "name": "p", "coordinates": ["x", "y"], "fields": ["u"],
    "geometry": {"box": [[0, 1], [0, 2]]},
    "equations": [{"residual": "-lap(u) - 1"}],
    "conditions": [{"type": "dirichlet", "field": "u", "value": "0"}],
    "training": {"stages": [{"optimizer": "adam", "iterations": 10},
                            {"optimizer": "lbfgs", "iterations": 5}]}
  })");
}

json example() { return json::parse(kExample, nullptr, true, /*ignore_comments=*/true); }

/// The message load fails with, or "loaded" when it does not fail.
std::string error_of(const json& document, const std::vector<std::string>& overrides = {}) {
  try {
    io::case_from_json(document, "cases/p.json", overrides);
  } catch (const Error& e) {
    return e.what();
  }
  return "loaded";
}

std::string load_error(const std::string& path) {
  try {
    io::load_case(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "loaded";
}

/// A fresh folder under the system temp folder, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("tessera_case_test_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path file = path / name;
    std::ofstream(file) << text;
    return file.string();
  }
};

}  // namespace

TEST_CASE("a case with every section loads with the documented values") {
  TempDir dir;
  const std::string file = dir.write("poisson2d.json", kExample);
  const io::Case c = io::load_case(file);
  CHECK(c.file == file);
  CHECK(c.folder == dir.path.string());
  CHECK(c.effective == example());
  CHECK(c.name == "poisson2d");
  CHECK(c.seed == 1234);
  CHECK(name(c.dtype) == std::string("float32"));
  CHECK(c.device == DeviceChoice::automatic);
  CHECK(c.constants == std::map<std::string, double>{{"k", 1.0}});
  CHECK(c.coordinates == std::vector<std::string>{"x", "y"});
  CHECK_FALSE(c.time.has_value());
  CHECK(c.fields == std::vector<std::string>{"u"});
  CHECK(c.geometry.kind == ShapeKind::box);
  REQUIRE(c.geometry.box.size() == 2);
  CHECK(c.geometry.box[0] == std::array<double, 2>{0, 1});
  CHECK(c.geometry.box[1] == std::array<double, 2>{0, 1});
  REQUIRE(c.equations.size() == 1);
  CHECK(c.equations[0].name == "poisson");
  CHECK(c.equations[0].residual.text == "-k*lap(u) - 2*pi^2*sin(pi*x)*sin(pi*y)");
  CHECK(c.equations[0].residual.key == "equations[0].residual");
  CHECK(c.equations[0].weight == 1.0);
  REQUIRE(c.conditions.size() == 1);
  const io::ConditionSpec& walls = c.conditions[0];
  CHECK(walls.name == "walls");
  CHECK(walls.type == ConditionKind::dirichlet);
  CHECK(walls.on == "boundary");
  CHECK(walls.field == "u");
  REQUIRE(walls.value.has_value());
  CHECK(walls.value->text == "0");
  CHECK(walls.value->key == "conditions[0].value");
  CHECK(walls.points == 512);
  CHECK(walls.key == "conditions[0]");
  REQUIRE(c.exact.count("u") == 1);
  CHECK(c.exact.at("u").text == "sin(pi*x)*sin(pi*y)");
  CHECK(c.exact.at("u").key == "exact.u");
  CHECK_FALSE(c.reference_file.has_value());
  CHECK(c.decomposition.method == DecompositionMethod::xpinn);
  CHECK(c.decomposition.split == std::map<std::string, int>{{"x", 2}, {"y", 2}});
  CHECK(c.decomposition.cuts.empty());
  CHECK(c.decomposition.interface.points == 128);
  CHECK(c.decomposition.interface.weights ==
        std::map<std::string, double>{{"continuity", 20}, {"residual", 1}});
  CHECK(c.decomposition.ranks_per_subdomain == 1);
  CHECK(c.network.hidden == std::vector<int64_t>{50, 50, 50});
  CHECK(c.network.activation == ActivationChoice::tanh);
  CHECK(c.network.init == InitChoice::xavier_normal);
  CHECK(c.training.collocation.points == 2048);
  CHECK(c.training.collocation.sampler == SamplerChoice::sobol);
  CHECK(c.training.collocation.resample_every == 100);
  CHECK(c.training.derivatives == DerivativeChoice::automatic);
  REQUIRE(c.training.stages.size() == 2);
  CHECK(c.training.stages[0].optimizer == find_optimizer("adam"));
  CHECK(c.training.stages[0].iterations == 4000);
  CHECK(c.training.stages[0].lr == doctest::Approx(1e-3));
  REQUIRE(c.training.stages[0].decay.has_value());
  CHECK(c.training.stages[0].decay->rate == doctest::Approx(0.9));
  CHECK(c.training.stages[0].decay->every == 1000);
  CHECK(c.training.stages[0].key == "training.stages[0]");
  CHECK(c.training.stages[1].optimizer == find_optimizer("lbfgs"));
  CHECK(c.training.stages[1].iterations == 500);
  CHECK(c.training.stages[1].lr == 1.0);
  CHECK(c.training.stages[1].history == 1000);
  CHECK(c.training.stages[1].scaling == HistoryScaling::self);
  CHECK(c.training.log_every == 100);
  CHECK(c.output.directory == "results/poisson2d");
  CHECK(c.output.grid == std::map<std::string, int64_t>{{"x", 201}, {"y", 201}});
}

TEST_CASE("omitted keys take the documented defaults") {
  const io::Case c = io::case_from_json(minimal(), "p.json");
  CHECK(c.folder == ".");
  CHECK(c.seed == 1234);
  CHECK(name(c.dtype) == std::string("float32"));
  CHECK(c.device == DeviceChoice::automatic);
  CHECK(c.equations[0].name == "eq0");
  CHECK(c.conditions[0].name == "dirichlet0");
  CHECK(c.conditions[0].on == "boundary");
  CHECK(c.conditions[0].points == 256);
  CHECK(c.decomposition.method == DecompositionMethod::none);
  CHECK(c.network.hidden == std::vector<int64_t>{50, 50, 50});
  CHECK(c.network.activation == ActivationChoice::tanh);
  CHECK(c.training.collocation.points == 2048);
  CHECK(c.training.collocation.sampler == SamplerChoice::sobol);
  CHECK(c.training.collocation.resample_every == 100);
  CHECK(c.training.stages[0].lr == doctest::Approx(1e-3));
  CHECK(c.training.stages[1].lr == 1.0);
  CHECK(c.training.stages[1].tolerance == 1e-12);
  CHECK(c.training.log_every == 100);
  CHECK(c.training.checkpoint_every == 0);
  CHECK(c.output.directory == "results/p");
  CHECK(c.output.grid.empty());
}

TEST_CASE("a misspelt key is rejected with a hint from the keys valid at its level") {
  json doc = minimal();
  doc["nmae"] = "x";
  CHECK(error_of(doc) == "cases/p.json: nmae: unknown key (did you mean 'name'?)");

  doc = minimal();
  doc["training"]["stages"][0]["iteratons"] = 5;
  CHECK(error_of(doc) ==
        "cases/p.json: training.stages[0].iteratons: unknown key (did you mean 'iterations'?)");

  doc = minimal();
  doc["network"] = {{"zzzzzz", 1}};
  CHECK(error_of(doc) ==
        "cases/p.json: network.zzzzzz: unknown key; valid keys here: 'architecture', "
        "'hidden', 'activation', 'adaptive_activation', 'fourier_features', "
        "'weight_factorization', 'init'");

  doc = minimal();
  doc["training"]["stages"][0]["history"] = 5;
  CHECK(error_of(doc) ==
        "cases/p.json: training.stages[0].history: not a key of an adam stage "
        "(only lbfgs takes it); adam takes 'optimizer', 'iterations', 'lr', "
        "'decay', 'warmup', 'clip', 'points', 'dtype', 'precision'");

  doc = minimal();
  doc["training"]["stages"][0] = {{"optimizer", "ssbroyden"}, {"clip", 1}};
  CHECK(error_of(doc) ==
        "cases/p.json: training.stages[0].clip: not a key of an ssbroyden stage "
        "(only adam takes it); ssbroyden takes 'optimizer', 'iterations', 'lr', "
        "'tolerance', 'points', 'dtype', 'precision', 'hessian'");

  // The curvature pairs' count belongs to the limited-memory stages only.
  doc = minimal();
  doc["training"]["stages"][0] = {{"optimizer", "bfgs"}, {"history", 20}};
  CHECK(error_of(doc) ==
        "cases/p.json: training.stages[0].history: not a key of a bfgs stage "
        "(only lbfgs takes it); bfgs takes 'optimizer', 'iterations', 'lr', "
        "'tolerance', 'points', 'dtype', 'precision', 'hessian'");
  doc = minimal();
  doc["training"]["stages"][0] = {{"optimizer", "ssbroyden"}, {"hessian", "blocks"}};
  const auto blocks = io::case_from_json(doc, "cases/p.json", {});
  REQUIRE(blocks.training.stages[0].hessian);
  CHECK(*blocks.training.stages[0].hessian == io::HessianLayout::blocks);

  // L-BFGS's scaling: self by default, "none" for the classic method, nothing else; and only
  // L-BFGS takes it.
  doc = minimal();
  doc["training"]["stages"][0] = {{"optimizer", "lbfgs"}, {"scaling", "none"}};
  CHECK(io::case_from_json(doc, "cases/p.json", {}).training.stages[0].scaling ==
        io::HistoryScaling::none);
  doc["training"]["stages"][0]["scaling"] = "broyden";
  CHECK(io::case_from_json(doc, "cases/p.json", {}).training.stages[0].scaling ==
        io::HistoryScaling::broyden);
  doc["training"]["stages"][0]["scaling"] = "auto";
  CHECK(error_of(doc).rfind("cases/p.json: training.stages[0].scaling:", 0) == 0);
  doc["training"]["stages"][0] = {{"optimizer", "ssbroyden"}, {"scaling", "self"}};
  CHECK(error_of(doc).rfind("cases/p.json: training.stages[0].scaling: not a key", 0) == 0);

  doc = minimal();
  doc["conditions"][0]["axis"] = "x";
  CHECK(error_of(doc) ==
        "cases/p.json: conditions[0].axis: not a key of a dirichlet condition; "
        "it takes 'on', 'field', 'value', 'enforce' (and 'name', 'points', 'weight')");

  doc = minimal();
  doc["conditions"][0]["enforce"] = "hard";
  CHECK(error_of(doc).rfind("cases/p.json: conditions[0].enforce:", 0) == 0);
}

TEST_CASE("a value of the wrong type or range names the key and what it expects") {
  json doc = minimal();
  doc["training"]["stages"][0]["iterations"] = "abc";
  CHECK(error_of(doc) ==
        "cases/p.json: training.stages[0].iterations: expected a positive integer, got \"abc\"");

  doc = minimal();
  doc["training"]["collocation"] = {{"points", 0}};
  CHECK(error_of(doc) ==
        "cases/p.json: training.collocation.points: expected a positive integer, got 0");

  doc = minimal();
  doc["training"]["stages"][0]["lr"] = -1;
  CHECK(error_of(doc) == "cases/p.json: training.stages[0].lr: expected a positive number, got -1");

  doc = minimal();
  doc["conditions"][0]["weight"] = -2.5;
  CHECK(error_of(doc) ==
        "cases/p.json: conditions[0].weight: expected a non-negative number, got -2.5");

  doc = minimal();
  doc["training"]["stages"][0]["iterations"] = 1e3;  // an integral number is an integer
  CHECK(io::case_from_json(doc, "p.json").training.stages[0].iterations == 1000);
}

TEST_CASE("an unknown enum value lists the valid ones") {
  json doc = minimal();
  doc["network"] = {{"activation", "relu"}};
  CHECK(error_of(doc) ==
        "cases/p.json: network.activation: expected one of \"tanh\", \"sin\", "
        "\"gelu\", \"silu\", got \"relu\" (did you mean 'gelu'?)");
  doc["network"]["activation"] = "tahn";
  CHECK(error_of(doc) ==
        "cases/p.json: network.activation: expected one of \"tanh\", \"sin\", "
        "\"gelu\", \"silu\", got \"tahn\" (did you mean 'tanh'?)");
  doc = minimal();
  doc["training"]["collocation"] = {{"sampler", "sobel"}};
  CHECK(error_of(doc) ==
        "cases/p.json: training.collocation.sampler: expected one of \"uniform\", \"lhs\", "
        "\"sobol\", got \"sobel\" (did you mean 'sobol'?)");
  doc = minimal();
  doc["training"]["stages"][1]["optimizer"] = "sgd";
  CHECK(error_of(doc) ==
        "cases/p.json: training.stages[1].optimizer: expected one of \"adam\", "
        "\"lbfgs\", \"bfgs\", \"ssbroyden\", got \"sgd\"");
}

TEST_CASE("a missing required key says what to add") {
  json doc = minimal();
  doc.erase("fields");
  CHECK(error_of(doc) ==
        "cases/p.json: fields: missing required key; add \"fields\": [\"u\"] (the unknowns)");
  doc = minimal();
  doc["training"].erase("stages");
  CHECK(error_of(doc) ==
        "cases/p.json: training.stages: missing required key; add \"stages\": "
        "[{\"optimizer\": \"adam\", \"iterations\": 1000}] (run in order), or \"budget\": "
        "600 (seconds of training: Tessera plans the stages)");
  doc = minimal();
  doc["conditions"][0].erase("value");
  CHECK(error_of(doc) ==
        "cases/p.json: conditions[0].value: missing required key; add \"value\": \"<expression>\"");
}

TEST_CASE("geometry dimensions must match the coordinates") {
  json doc = minimal();
  doc["geometry"] = {{"box", {{0, 1}}}};
  CHECK(error_of(doc) ==
        "cases/p.json: geometry.box: expected one [lo, hi] pair per coordinate "
        "('x', 'y'), got 1 pair");
  doc["geometry"] = {{"interval", {0, 1}}};
  CHECK(error_of(doc) ==
        "cases/p.json: geometry.interval: 'interval' is 1-D but the case has 2 "
        "coordinates; use \"box\": [[lo, hi], ...] with one pair per coordinate");
  doc["geometry"] = json::parse(R"({"box": [[0, 1], [2, 1]]})");
  CHECK(error_of(doc) == "cases/p.json: geometry.box[1]: expected lo < hi, got [2,1]");
  doc["geometry"] = json::parse(R"({"box": [[0, 1], [0, 1]], "disk": {}})");
  CHECK(error_of(doc).find("cases/p.json: geometry: a shape has exactly one of") == 0);
  doc["geometry"] = json::parse(R"({"ball": {"center": [0, 0, 0], "radius": 1}})");
  CHECK(error_of(doc) ==
        "cases/p.json: geometry.ball: 'ball' is 3-D but the case has 2 "
        "coordinates ('x', 'y')");
  doc["geometry"] = json::parse(
      R"J({"difference": [{"box": [[0, 1], [0, 1]]}, {"disk": {"center": [0.5, 0.5], "radius": 0.1}}],
          "tags": {"hole": "inside(disk0)"}})J");
  const io::Case c = io::case_from_json(doc, "p.json");
  CHECK(c.geometry.kind == ShapeKind::difference);
  CHECK(c.geometry.tags.at("hole") == "inside(disk0)");
  CHECK(c.geometry.raw == doc["geometry"]);
  // The whole tree is read: names count shapes of a kind depth-first, keys locate them.
  const auto& shape = c.geometry.shape;
  REQUIRE(shape.children.size() == 2);
  CHECK(shape.children[0].name == "box0");
  CHECK(shape.children[1].name == "disk0");
  CHECK(shape.children[1].key == "geometry.difference[1].disk");
  CHECK(shape.children[1].center == std::vector<double>{0.5, 0.5});
  CHECK(shape.children[1].radius == 0.1);
}

TEST_CASE("geometry: polygons inline or from a file, radii, nested tags, mesh output times") {
  json doc = minimal();
  doc["geometry"] = json::parse(R"({"polygon": {"vertices": [[0, 0], [1, 0], [0, 1]],
                                                 "holes": [[[0.1, 0.1], [0.2, 0.1], [0.1, 0.2]]]}})");
  const io::Case c = io::case_from_json(doc, "p.json");
  CHECK(c.geometry.shape.vertices.size() == 3);
  REQUIRE(c.geometry.shape.holes.size() == 1);
  CHECK(c.geometry.shape.holes[0][2] == std::array<double, 2>{0.1, 0.2});
  doc["geometry"] = json::parse(R"({"polygon": "meshes/star.off"})");
  CHECK(io::case_from_json(doc, "cases/p.json").geometry.shape.file == "cases/meshes/star.off");
  doc["geometry"] = json::parse(R"({"polygon": {"vertices": [[0, 0], [1, 0]]}})");
  CHECK(error_of(doc).find("cases/p.json: geometry.polygon.vertices: ") == 0);
  doc["geometry"] = json::parse(R"({"disk": {"center": [0, 0], "radius": -1}})");
  CHECK(error_of(doc).find("cases/p.json: geometry.disk.radius: ") == 0);
  doc["geometry"] = json::parse(R"({"disk": {"center": [0, 0, 0], "radius": 1}})");
  CHECK(error_of(doc) ==
        "cases/p.json: geometry.disk.center: expected 2 coordinates for a disk, got [0,0,0]");
  doc["geometry"] = json::parse(
      R"({"union": [{"box": [[0, 1], [0, 1]]}, {"disk": {"center": [0, 0], "radius": 1}, "tags": {"a": "x=0"}}]})");
  CHECK(error_of(doc) ==
        "cases/p.json: geometry.union[1].tags: tags belong on the top-level geometry; "
        "select the parts of a nested shape there with \"inside(disk0)\"");
  doc = minimal();
  doc["output"] = json::parse(R"({"mesh": {"max_cell_size": 0.1, "times": 5}})");
  CHECK(error_of(doc) ==
        "cases/p.json: output.mesh.times: \"times\" is for space-time problems; this "
        "case has no \"time\"");
}

TEST_CASE("names used in conditions and weights must be declared") {
  json doc = minimal();
  doc["conditions"][0]["field"] = "v";
  CHECK(error_of(doc) ==
        "cases/p.json: conditions[0].field: 'v' is not a field; declared fields: 'u'");
  doc["conditions"][0]["field"] = "uu";
  CHECK(error_of(doc) ==
        "cases/p.json: conditions[0].field: 'uu' is not a field; declared "
        "fields: 'u' (did you mean 'u'?)");

  doc = minimal();
  doc["conditions"].push_back(json::parse(R"({"type": "periodic", "axis": "t"})"));
  CHECK(error_of(doc) ==
        "cases/p.json: conditions[1].axis: 't' is not a spatial coordinate; "
        "expected one of 'x', 'y'");

  doc = minimal();
  doc["training"]["weights"] = {{"dirichlet0", 100}, {"eq1", 2}};
  CHECK(error_of(doc) ==
        "cases/p.json: training.weights.eq1: not a loss term; the terms are "
        "'eq0', 'dirichlet0', or use \"adaptive\": \"grad_norm\" (did you mean "
        "'eq0'?)");
  doc["training"]["weights"] = {{"continuity", 10}};
  CHECK(error_of(doc).find("cases/p.json: training.weights.continuity: interface loss terms exist "
                           "only with a decomposition") == 0);

  doc = minimal();
  doc["fields"] = {"u", "x"};
  CHECK(error_of(doc) ==
        "cases/p.json: fields[1]: 'x' is already declared at coordinates[0]; "
        "every coordinate, field, constant and parameter needs its own name");
  doc["fields"] = {"u_1"};
  CHECK(error_of(doc).find("cases/p.json: fields[0]: 'u_1' is not a valid field name") == 0);
  doc = minimal();
  doc["constants"] = {{"pi", 3}};
  CHECK(error_of(doc) ==
        "cases/p.json: constants.pi: 'pi' is built into expressions (the "
        "constant pi); choose another name for this constant");

  doc = minimal();
  doc["conditions"].push_back(json::parse(R"({"type": "initial", "field": "u", "value": "0"})"));
  CHECK(error_of(doc).find("cases/p.json: conditions[1].type: an initial condition needs a time "
                           "coordinate") == 0);
  doc["time"] = {{"range", {0, 2}}};
  const io::Case c = io::case_from_json(doc, "p.json");
  CHECK(c.conditions[1].on == "initial");
  CHECK(c.conditions[1].name == "initial1");
  CHECK(c.time->name == "t");

  doc = minimal();
  doc["equations"][0]["name"] = "dirichlet0";
  CHECK(error_of(doc) ==
        "cases/p.json: conditions[0]: the name 'dirichlet0' is already used by "
        "equations[0]; give each equation and condition its own \"name\"");
}

TEST_CASE("decomposition keys are checked against the coordinates and the domain") {
  json doc = minimal();
  doc["decomposition"] = json::parse(R"({"method": "xpinn", "cuts": {"y": [0.5, 2.5]}})");
  CHECK(error_of(doc) ==
        "cases/p.json: decomposition.cuts.y[1]: cut 2.5 is outside the range of "
        "'y' (0, 2); cuts must lie strictly inside it");
  doc["decomposition"] = json::parse(R"({"method": "xpinn", "cuts": {"y": [1.5, 0.5]}})");
  CHECK(error_of(doc) ==
        "cases/p.json: decomposition.cuts.y: cut positions must be strictly "
        "increasing, got [1.5,0.5]");
  doc["decomposition"] = json::parse(R"({"method": "xpinn", "split": {"z": 2}})");
  CHECK(error_of(doc) ==
        "cases/p.json: decomposition.split.z: 'z' is not a coordinate; expected "
        "one of 'x', 'y'");
  doc["decomposition"] = json::parse(R"({"split": {"x": 2}})");
  CHECK(error_of(doc).find("cases/p.json: decomposition.split: needs a decomposition") == 0);
  doc["decomposition"] = json::parse(R"({"method": "cpinn", "split": {"x": 2}})");
  CHECK(error_of(doc).find("cases/p.json: equations[0]: missing \"flux\"") == 0);
  doc["decomposition"] = json::parse(R"({"method": "xpinn", "split": {"x": 2, "y": 2}})");
  doc["subdomains"] = json::parse(R"({"3": {"network": {"hidden": [80, 80]}}, "4": {}})");
  CHECK(error_of(doc) ==
        "cases/p.json: subdomains.4: subdomain 4 does not exist: the "
        "decomposition has 4 subdomains (ids 0 to 3)");
  doc["subdomains"].erase("4");
  doc["network"] = {{"activation", "sin"}};
  const io::Case c = io::case_from_json(doc, "p.json");
  REQUIRE(c.subdomains.at(3).network.has_value());
  CHECK(c.subdomains.at(3).network->hidden == std::vector<int64_t>{80, 80});
  CHECK(c.subdomains.at(3).network->activation ==
        ActivationChoice::sin);  // inherited from "network"
}

TEST_CASE("fbpinn: overlap and levels are read; what it cannot honour is refused") {
  json doc = minimal();
  doc["decomposition"] = json::parse(
      R"({"method": "fbpinn", "split": {"x": 8}, "overlap": 0.3, "levels": [{"x": 2}, {"y": 2}]})");
  const io::Case c = io::case_from_json(doc, "p.json");
  CHECK(c.decomposition.method == DecompositionMethod::fbpinn);
  CHECK(c.decomposition.overlap == 0.3);
  REQUIRE(c.decomposition.levels.size() == 2);
  CHECK(c.decomposition.levels[1].at("y") == 2);
  CHECK(c.network.hidden == std::vector<int64_t>{16, 16});  // small subdomain networks
  doc["network"] = json::parse(R"({"hidden": [32]})");
  CHECK(io::case_from_json(doc, "p.json").network.hidden == std::vector<int64_t>{32});
  doc["decomposition"]["levels"] = json::array();  // the documented default: no coarse level
  CHECK(io::case_from_json(doc, "p.json").decomposition.levels.empty());
  // Uniform redraws instead of residual-based sampling unless the case asks for it.
  CHECK_FALSE(c.training.collocation.adaptive.has_value());
  doc["training"]["collocation"]["adaptive"] = true;
  CHECK(io::case_from_json(doc, "p.json").training.collocation.adaptive.has_value());
  // Slices: absent means the default the rank count decides; given, they are kept.
  CHECK_FALSE(c.decomposition.slices.has_value());
  doc["decomposition"]["slices"] = 12;
  CHECK(io::case_from_json(doc, "p.json").decomposition.slices == 12);

  const auto refused = [&](const char* decomposition, const std::string& start,
                           const char* network = nullptr) {
    json d = minimal();
    d["decomposition"] = json::parse(decomposition);
    if (network) d["network"] = json::parse(network);
    const std::string error = error_of(d);
    CHECK_MESSAGE(error.find(start) == 0, error);
  };
  refused(R"({"method": "fbpinn"})", "cases/p.json: decomposition.method: \"fbpinn\" needs");
  refused(R"({"method": "fbpinn", "split": {"x": 2}, "overlap": 1.5})",
          "cases/p.json: decomposition.overlap: expected a fraction of the cell width in (0, 1]");
  refused(R"({"method": "fbpinn", "split": {"x": 2}, "interface": {"points": 8}})",
          "cases/p.json: decomposition.interface: FBPINN subdomains overlap");
  refused(R"({"method": "fbpinn", "split": {"x": 2}, "levels": [{"z": 2}]})",
          "cases/p.json: decomposition.levels[0].z: 'z' is not a coordinate");
  refused(R"({"method": "xpinn", "split": {"x": 2}, "overlap": 0.5})",
          "cases/p.json: decomposition.overlap: applies to the overlapping subdomains");
  refused(R"({"method": "xpinn", "split": {"x": 2}, "slices": 4})",
          "cases/p.json: decomposition.slices: applies to the overlapping subdomains");
  refused(R"({"method": "fbpinn", "split": {"x": 2}, "slices": 0})",
          "cases/p.json: decomposition.slices: ");
  refused(R"({"method": "fbpinn", "split": {"x": 2}, "slices": 100000})",
          "cases/p.json: decomposition.slices: expected at most 65536 slices, got 100000");
  refused(R"({"method": "fbpinn", "split": {"x": 2}})",
          "cases/p.json: network.fourier_features: the subdomain networks of \"fbpinn\" are plain",
          R"({"fourier_features": {"count": 8, "scale": 1}})");
  json d = minimal();
  d["decomposition"] = json::parse(R"({"method": "fbpinn", "split": {"x": 2}})");
  d["training"]["derivatives"] = "taylor";  // the forward engine serves the windowed sum too
  CHECK(error_of(d) == "loaded");
}

TEST_CASE("file errors: syntax error with line and column, missing file, relative paths") {
  TempDir dir;
  const std::string bad = dir.write("p.json", "{\n  \"name\": \"p\",\n}\n");
  CHECK(load_error(bad) == bad +
                               ":3:1: JSON syntax error: unexpected '}'; expected string "
                               "literal (while parsing object key; remove the trailing comma "
                               "before it)");
  CHECK(load_error("no/such.json") ==
        "cannot open case file 'no/such.json': No such file or directory");

  json doc = minimal();
  doc["reference"] = {{"file", "ref.h5"}};
  doc["conditions"].push_back(
      json::parse(R"({"type": "data", "file": "data/obs.h5", "fields": ["u"]})"));
  doc["geometry"] = json::parse(R"({"union": [{"mesh": "meshes/a.off"}, {"mesh": "/abs/b.off"}]})");
  doc["output"] = {{"directory", "out/p"}};
  const std::string file = dir.write("case.json", doc.dump());
  const io::Case c = io::load_case(file);
  CHECK(*c.reference_file == (dir.path / "ref.h5").string());
  CHECK(c.conditions[1].file == (dir.path / "data/obs.h5").string());
  CHECK(c.geometry.raw["union"][0]["mesh"] == (dir.path / "meshes/a.off").string());
  CHECK(c.geometry.raw["union"][1]["mesh"] == "/abs/b.off");
  CHECK(c.effective["geometry"]["union"][0]["mesh"] == "meshes/a.off");
  CHECK(c.output.directory == "out/p");
}

TEST_CASE("--set overrides replace objects and array entries and are validated") {
  const io::Case c = io::case_from_json(
      example(), "p.json",
      {"training.stages.0.iterations=200", "training.stages[1].lr=0.5",
       R"(decomposition={"method":"xpinn","split":{"x":4}})", "network.activation=sin",
       "training.time_limit=60", "subdomains.0.collocation.points=100", "name=other"});
  CHECK(c.training.stages[0].iterations == 200);
  CHECK(c.training.stages[0].decay.has_value());  // the rest of the stage is kept
  CHECK(c.training.stages[1].lr == 0.5);
  CHECK(c.decomposition.split == std::map<std::string, int>{{"x", 4}});
  CHECK(c.decomposition.interface.weights.empty());  // replaced, not merged
  CHECK(c.network.activation == ActivationChoice::sin);
  CHECK(c.training.time_limit == 60.0);
  CHECK(c.subdomains.at(0).collocation_points == 100);
  CHECK(c.name == "other");
  CHECK(c.effective["training"]["stages"][0]["iterations"] == 200);
  CHECK(c.effective["network"]["activation"] == "sin");

  CHECK(error_of(example(), {"training"}) == "--set 'training': expected path=value");
  CHECK(error_of(example(), {"training.stages.0.iterations=-5"}) ==
        "cases/p.json: training.stages[0].iterations: expected a positive integer, got -5 (from "
        "--set 'training.stages.0.iterations=-5')");
  CHECK(error_of(example(), {"training.stages.2.iterations=5"}) ==
        "--set 'training.stages.2.iterations=5': index 2 is past the end of training.stages, "
        "which has 2 entries; change an existing entry or replace the whole array");
  CHECK(error_of(example(), {"network.activaton=sin"}) ==
        "cases/p.json: network.activaton: unknown key (did you mean 'activation'?) (from --set "
        "'network.activaton=sin')");
  CHECK(error_of(example(), {"seed.x=1"}) ==
        "--set 'seed.x=1': seed is a number, not an object or array; set seed itself instead");
}

TEST_CASE("balancing is on unless switched off; causal weights need time") {
  auto c = io::case_from_json(minimal(), "cases/p.json");
  CHECK(c.training.weights.adaptive == io::WeightBalancing::grad_norm);
  CHECK_FALSE(c.training.causal.enabled.has_value());
  CHECK_FALSE(c.training.stages[0].warmup.has_value());

  json doc = minimal();
  doc["training"]["weights"] = {{"adaptive", "none"}};
  CHECK(io::case_from_json(doc, "cases/p.json").training.weights.adaptive ==
        io::WeightBalancing::none);
  doc["training"]["weights"]["adaptive_every"] = 10;
  CHECK(error_of(doc) ==
        "cases/p.json: training.weights.adaptive_every: not used with \"adaptive\": \"none\" "
        "(fixed weights); remove one of them");

  doc = minimal();
  doc["training"]["causal"] = {{"chunks", 16}};
  CHECK(error_of(doc) ==
        "cases/p.json: training.causal: causal weights need time; this problem has no \"time\" "
        "(remove \"causal\")");
  doc["training"]["causal"]["enabled"] = false;
  CHECK(error_of(doc) == "loaded");
  doc["time"] = {{"range", {0, 1}}};
  doc["training"]["causal"] = {{"chunks", 16}, {"tolerance", 10}};
  doc["training"]["stages"][0]["warmup"] = 3;
  c = io::case_from_json(doc, "cases/p.json");
  CHECK(c.training.causal.chunks == 16);
  CHECK(c.training.causal.tolerance == 10);
  CHECK(c.training.stages[0].warmup == 3);
}

TEST_CASE("residual-based redistribution: on by default, true takes the defaults, false is off") {
  json doc = minimal();
  auto c = io::case_from_json(doc, "cases/p.json");
  REQUIRE(c.training.collocation.adaptive);
  CHECK_FALSE(c.training.collocation.adaptive_given);
  CHECK(c.training.collocation.adaptive->every == 1000);
  doc["training"]["collocation"] = {{"adaptive", true}};
  c = io::case_from_json(doc, "cases/p.json");
  REQUIRE(c.training.collocation.adaptive);
  CHECK(c.training.collocation.adaptive_given);
  CHECK(c.training.collocation.adaptive->every == 1000);
  CHECK(c.training.collocation.adaptive->candidates == 8);
  doc["training"]["collocation"] = {
      {"adaptive", {{"every", 100}, {"candidates", 4}, {"exponent", 2}, {"constant", 0.5}}}};
  c = io::case_from_json(doc, "cases/p.json");
  CHECK(c.training.collocation.adaptive->every == 100);
  CHECK(c.training.collocation.adaptive->candidates == 4);
  CHECK(c.training.collocation.adaptive->exponent == 2);
  CHECK(c.training.collocation.adaptive->constant == 0.5);
  doc["training"]["collocation"] = {{"adaptive", false}};
  CHECK_FALSE(io::case_from_json(doc, "cases/p.json").training.collocation.adaptive);
  doc["training"]["collocation"] = {{"adaptive", {{"every", 0}}}};
  CHECK(error_of(doc).rfind("cases/p.json: training.collocation.adaptive.every:", 0) == 0);
  doc["training"]["collocation"] = {{"adaptive", {{"evry", 10}}}};
  CHECK(error_of(doc).find("did you mean 'every'") != std::string::npos);
}

TEST_CASE("a stage's dtype is read; the quasi-Newton methods default to float64 and 1e-12") {
  json doc = minimal();
  doc["training"]["stages"][0] = {{"optimizer", "ssbroyden"}, {"dtype", "float32"}};
  auto c = io::case_from_json(doc, "cases/p.json");
  CHECK(c.training.stages[0].optimizer == io::find_optimizer("ssbroyden"));
  CHECK(c.training.stages[0].dtype == io::FloatType::float32);
  CHECK(c.training.stages[0].tolerance == 1e-12);
  doc["training"]["stages"][0] = {{"optimizer", "lbfgs"}, {"history", 7}};
  c = io::case_from_json(doc, "cases/p.json");
  CHECK_FALSE(c.training.stages[0].dtype);
  CHECK(c.training.stages[0].optimizer->float64);
  CHECK(c.training.stages[0].history == 7);
  CHECK(c.training.stages[0].tolerance == 1e-12);
  doc["training"]["stages"][0] = {{"optimizer", "bfgs"}, {"dtype", "float16"}};
  CHECK(error_of(doc).rfind("cases/p.json: training.stages[0].dtype:", 0) == 0);
}

TEST_CASE("weight factorisation: true takes the defaults, an object sets them") {
  json doc = minimal();
  doc["network"] = {{"weight_factorization", true}};
  auto c = io::case_from_json(doc, "cases/p.json");
  REQUIRE(c.network.weight_factorization.has_value());
  CHECK(c.network.weight_factorization->first == 1.0);
  CHECK(c.network.weight_factorization->second == 0.1);
  doc["network"] = {{"weight_factorization", {{"mean", 0.5}}}};
  c = io::case_from_json(doc, "cases/p.json");
  CHECK(c.network.weight_factorization->first == 0.5);
  doc["network"] = {{"weight_factorization", {{"std", -1}}}};
  CHECK(error_of(doc).rfind("cases/p.json: network.weight_factorization.std:", 0) == 0);
}

TEST_CASE("network.architecture: mlp by default, modified_mlp needs equal hidden widths") {
  json doc = minimal();
  CHECK(io::case_from_json(doc, "cases/p.json").network.architecture == ArchitectureChoice::mlp);
  doc["network"] = {{"architecture", "modified_mlp"}, {"hidden", {40, 40}}};
  CHECK(io::case_from_json(doc, "cases/p.json").network.architecture ==
        ArchitectureChoice::modified_mlp);
  doc["network"]["hidden"] = {40, 20};
  CHECK(error_of(doc) ==
        "cases/p.json: network.hidden: the modified MLP mixes every hidden layer with encoders "
        "of one width, so all hidden widths must be equal; got 40 and 20; give every hidden "
        "layer the same width");
  doc["network"] = {{"architecture", "resnet"}};
  CHECK(error_of(doc).rfind("cases/p.json: network.architecture:", 0) == 0);
}

TEST_CASE("network.init: a string chooses the initialisation, an object a run to start from") {
  json doc = minimal();
  const io::Case plain = io::case_from_json(doc, "cases/p.json");
  CHECK_FALSE(plain.warm_start.has_value());
  doc["network"] = {{"hidden", {8}}, {"init", {{"from", "../results/a"}}}};
  const io::Case warm = io::case_from_json(doc, "cases/p.json");
  REQUIRE(warm.warm_start.has_value());
  CHECK(warm.warm_start->from == "../results/a");
  // Relative paths resolve against the case file's folder, as the case's other paths do.
  CHECK(warm.warm_start->directory == "results/a");
  CHECK_FALSE(warm.warm_start->subdomain.has_value());
  CHECK(warm.network.hidden == std::vector<int64_t>{8});
  CHECK(warm.network.init == InitChoice::xavier_normal);
  doc["network"]["init"] = {{"from", "/runs/a"}, {"subdomain", 2}};
  const io::Case picked = io::case_from_json(doc, "cases/p.json");
  CHECK(picked.warm_start->directory == "/runs/a");
  CHECK(picked.warm_start->subdomain == 2);

  doc["network"]["init"] = {{"subdomain", 2}};
  CHECK(error_of(doc).rfind("cases/p.json: network.init.from: missing", 0) == 0);
  doc["network"]["init"] = {{"from", "a"}, {"subdomian", 2}};
  CHECK(error_of(doc).find("network.init.subdomian: unknown key (did you mean 'subdomain'?)") !=
        std::string::npos);
  doc["network"]["init"] = {{"from", "a"}, {"subdomain", -1}};
  CHECK(error_of(doc).rfind("cases/p.json: network.init.subdomain:", 0) == 0);
  doc["network"]["init"] = 3;
  CHECK(error_of(doc) ==
        "cases/p.json: network.init: expected \"xavier_normal\", \"xavier_uniform\" or "
        "{\"from\": \"RUN_DIR\"}, got 3");
}

TEST_CASE("network.init: a warm start is case-wide, not a subdomain's") {
  json doc = minimal();
  doc["decomposition"] = {{"method", "xpinn"}, {"split", {{"x", 2}}}};
  doc["subdomains"] = {{"1", {{"network", {{"init", {{"from", "a"}}}}}}}};
  CHECK(error_of(doc).rfind("cases/p.json: subdomains.1.network.init: a warm start", 0) == 0);
  doc["network"] = {{"init", {{"from", "a"}}}};
  doc["subdomains"] = {{"1", {{"network", {{"init", "xavier_uniform"}}}}}};
  CHECK(error_of(doc).rfind("cases/p.json: subdomains.1.network.init: every network starts", 0) ==
        0);
}

TEST_CASE("device: \"cuda:N\" pins a device index; a malformed index names the key") {
  json doc = minimal();
  doc["device"] = "cuda:1";
  const io::Case c = io::case_from_json(doc, "cases/p.json");
  CHECK(c.device == DeviceChoice::cuda);
  CHECK(c.device_index == 1);
  CHECK(io::case_from_json(minimal(), "cases/p.json").device_index == -1);
  doc["device"] = "cuda:x";
  CHECK(error_of(doc) ==
        "cases/p.json: device: expected \"cuda:N\" with N a device index (0, 1, ...), got "
        "\"cuda:x\"");
  doc["device"] = "gpu";
  CHECK(error_of(doc).find("expected one of \"auto\", \"cpu\", \"cuda\"") != std::string::npos);
}
