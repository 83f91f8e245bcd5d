// Fields of some of the inputs: each has a network of its own on its inputs, and its
// derivatives along the other inputs are exactly zero in both derivative engines.
#include <doctest/doctest.h>

#include "tessera/app/decomposition.hpp"
#include "tessera/app/model.hpp"
#include "tessera/app/problem.hpp"
#include "tessera/autodiff/reverse.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/case.hpp"
#include "tessera/nn/field_networks.hpp"

using namespace tessera;

namespace {

// u of (x, y, t), a of (x, y), b of (x) only.
io::Case space_time(const std::string& derivatives) {
  auto document = nlohmann::json::parse(R"JSON({
    "name": "fields", "dtype": "float64", "coordinates": ["x", "y"],
    "time": {"range": [0, 2]},
    "fields": ["u", {"name": "a", "of": ["x", "y"], "hidden": [9, 7]},
               {"name": "b", "of": ["x"]}],
    "geometry": {"box": [[0, 1], [-1, 1]]},
    "equations": [{"residual": "u_t - a*lap(u) - b"}],
    "conditions": [{"type": "dirichlet", "field": "u", "value": "0"}],
    "network": {"hidden": [12, 10]},
    "training": {"stages": [{"optimizer": "adam", "iterations": 10}]}
  })JSON");
  document["training"]["derivatives"] = derivatives;
  return io::case_from_json(document, "fields.json");
}

// The case built into subdomain 0's model (one subdomain).
struct Built {
  explicit Built(const std::string& derivatives)
      : c(space_time(derivatives)),
        p(app::build_problem(c)),
        d(app::build_decomposition(c, p, 1)),
        model(app::build_subdomain(c, p, d, 0)) {}
  io::Case c;
  app::Problem p;
  app::Decomposition d;
  std::unique_ptr<train::SubdomainModel> model;
};

torch::Tensor points() {
  torch::manual_seed(7);
  return torch::rand({40, 3}, torch::kFloat64) * torch::tensor({1.0, 2.0, 2.0}, torch::kFloat64) -
         torch::tensor({0.0, 1.0, 0.0}, torch::kFloat64);
}

using Key = expr::DerivativeKey;

// Every derivative up to order 2 of every field, and the Laplacians.
std::set<Key> all_keys() {
  std::set<Key> keys;
  for (int f = 0; f < 3; ++f) {
    keys.insert({f, {}, false});
    keys.insert({f, {0, 1}, true});
    for (int i = 0; i < 3; ++i) {
      keys.insert({f, {i}, false});
      for (int j = i; j < 3; ++j) keys.insert({f, {i, j}, false});
    }
  }
  return keys;
}

bool reads_all(const Key& key, const std::vector<int>& inputs) {
  if (key.laplacian) return true;
  for (int axis : key.wrt)
    if (std::find(inputs.begin(), inputs.end(), axis) == inputs.end()) return false;
  return true;
}

}  // namespace

TEST_CASE("a field of some inputs has its own network on those inputs") {
  const Built b("auto");
  const auto* networks = dynamic_cast<const nn::FieldNetworksImpl*>(b.model->network.get());
  REQUIRE(networks != nullptr);
  REQUIRE(networks->parts().size() == 3);
  CHECK(networks->parts()[0].name == "main");
  CHECK(networks->parts()[0].fields == std::vector<int>{0});
  CHECK(networks->parts()[1].inputs == std::vector<int>{0, 1});
  CHECK(networks->network(1)->options().hidden == std::vector<int64_t>{9, 7});
  CHECK(networks->parts()[2].inputs == std::vector<int>{0});
  CHECK(networks->network(2)->options().hidden == std::vector<int64_t>{12, 10});
  // Its input box is the subdomain's along its own inputs.
  CHECK(networks->network(2)->options().lower == std::vector<double>{0.0});
  CHECK(networks->network(1)->options().upper == std::vector<double>{1.0, 1.0});
  // Along the inputs it does not read, the field's value does not change.
  auto x = points();
  const auto before = b.model->fields->values(x, 3);
  x.select(1, 2).add_(0.5);
  const auto after = b.model->fields->values(x, 3);
  CHECK(torch::equal(before.select(1, 1), after.select(1, 1)));
  CHECK_FALSE(torch::equal(before.select(1, 0), after.select(1, 0)));
}

TEST_CASE("derivatives along the inputs a field does not read are zero in both engines") {
  const auto x = points();
  for (const char* engine : {"taylor", "autograd"}) {
    CAPTURE(engine);
    const Built b(engine);
    const auto env = b.model->fields->evaluate(x, all_keys(), /*create_graph=*/true);
    const std::vector<std::vector<int>> inputs = {{0, 1, 2}, {0, 1}, {0}};
    for (const auto& key : all_keys()) {
      CAPTURE(key);
      const auto& value = env.derivatives.at(key);
      if (reads_all(key, inputs[static_cast<std::size_t>(key.field)]))
        CHECK(value.abs().max().item<double>() > 0);
      else
        CHECK(torch::equal(value, torch::zeros_like(value)));
    }
    // A Laplacian over x and y of b(x) is its b_xx.
    CHECK(torch::equal(env.derivatives.at({2, {0, 1}, true}),
                       env.derivatives.at({2, {0, 0}, false})));
    // A loss reaches every network (the values for the output biases).
    auto loss = env.derivatives.at({0, {2}, false}) + env.derivatives.at({1, {0, 1}, true}) +
                env.derivatives.at({2, {0}, false});
    for (int f = 0; f < 3; ++f) loss = loss + env.derivatives.at({f, {}, false});
    loss.sum().backward();
    for (const auto& parameter : b.model->network->parameters()) CHECK(parameter.grad().defined());
  }
}

TEST_CASE("both engines give a field of some inputs the same derivatives") {
  const auto x = points();
  const Built forward("taylor"), reverse("autograd");
  const auto a = forward.model->fields->evaluate(x, all_keys(), false);
  const auto r = reverse.model->fields->evaluate(x, all_keys(), false);
  for (const auto& key : all_keys()) {
    CAPTURE(key);
    CHECK(torch::allclose(a.derivatives.at(key), r.derivatives.at(key), 1e-10, 1e-10));
  }
  // And they are the derivatives of the field's own network on its columns.
  const auto* networks = dynamic_cast<const nn::FieldNetworksImpl*>(forward.model->network.get());
  nn::Mlp own = networks->network(1);
  const auto columns = x.index_select(1, torch::tensor({0, 1}));
  const auto partials =
      autodiff::reverse_partials([own](const torch::Tensor& z) mutable { return own->forward(z); },
                                 columns, {{0, {1}, false}}, false);
  CHECK(torch::allclose(a.derivatives.at({1, {1}, false}), partials.at({0, {1}, false}), 1e-12,
                        1e-12));
}

TEST_CASE("a case without fields of some inputs keeps the plain network") {
  auto document = space_time("auto").effective;
  document["fields"] = {"u", "a", "b"};
  const auto c = io::case_from_json(document, "fields.json");
  const auto p = app::build_problem(c);
  const auto d = app::build_decomposition(c, p, 1);
  const auto model = app::build_subdomain(c, p, d, 0);
  CHECK(dynamic_cast<const nn::MlpImpl*>(model->network.get()) != nullptr);
}

TEST_CASE("with every field of some inputs there is no network of every input") {
  auto document = space_time("auto").effective;
  document["fields"] = {{{"name", "u"}, {"of", {"x", "t"}}}};
  document["equations"][0]["residual"] = "u_t - u_xx";
  const auto c = io::case_from_json(document, "fields.json");
  const auto p = app::build_problem(c);
  const auto d = app::build_decomposition(c, p, 1);
  const auto model = app::build_subdomain(c, p, d, 0);
  const auto* networks = dynamic_cast<const nn::FieldNetworksImpl*>(model->network.get());
  REQUIRE(networks != nullptr);
  REQUIRE(networks->parts().size() == 1);
  CHECK(networks->parts()[0].inputs == std::vector<int>{0, 2});
  const auto env = model->fields->evaluate(points(), {{0, {1}, false}, {0, {2}, false}}, false);
  CHECK(torch::equal(env.derivatives.at({0, {1}, false}), torch::zeros({40}, torch::kFloat64)));
  CHECK(env.derivatives.at({0, {2}, false}).abs().max().item<double>() > 0);
}
