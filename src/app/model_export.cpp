#include "tessera/app/model_export.hpp"

#include <torch/script.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "tessera/core/error.hpp"
#include "tessera/io/write_error.hpp"
#include "tessera/nn/fbpinn.hpp"
#include "tessera/nn/field_networks.hpp"
#include "tessera/nn/mlp.hpp"
#include "tessera/physics/exact_conditions.hpp"

namespace tessera::app {
namespace {

std::string literal(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17e", value);
  return text;
}

const char* activation_call(nn::Activation activation) {
  switch (activation) {
    case nn::Activation::tanh:
      return "torch.tanh";
    case nn::Activation::sin:
      return "torch.sin";
    case nn::Activation::gelu:
      return "torch.nn.functional.gelu";
    case nn::Activation::silu:
      return "torch.nn.functional.silu";
  }
  return "";
}

/// Builds the source line by line and names the tensors it reads.
class ScriptWriter {
 public:
  std::string tensor(const torch::Tensor& t) {
    model_.buffers.push_back(t.detach().to(torch::kCPU).clone());
    return "self.b" + std::to_string(model_.buffers.size() - 1);
  }
  void line(int indent, const std::string& text) {
    model_.source += std::string(4 * static_cast<std::size_t>(indent), ' ') + text + "\n";
  }
  ScriptedModel finish() { return std::move(model_); }

 private:
  ScriptedModel model_;
};

/// def <name>(self, x): the plain or modified MLP, as MlpImpl::forward.
void write_mlp(ScriptWriter& w, const nn::MlpImpl& net, const std::string& name) {
  const auto& o = net.options();
  const std::string act = activation_call(o.activation);
  w.line(0, "def " + name + "(self, x):");
  w.line(1, "z = (x - " + w.tensor(net.shift()) + ") * " + w.tensor(net.scale()));
  if (!o.periodic_inputs.empty()) {
    std::string columns;
    for (int64_t i = 0; i < o.inputs; ++i)
      if (!net.is_periodic(i)) columns += "z[:, " + std::to_string(i) + "], ";
    for (int axis : o.periodic_inputs) {
      const std::string angle = literal(M_PI) + " * z[:, " + std::to_string(axis) + "]";
      columns += "torch.cos(" + angle + "), torch.sin(" + angle + "), ";
    }
    w.line(1, "z = torch.stack([" + columns + "], 1)");
  } else if (net.fourier_matrix().defined()) {
    w.line(1, "p = " + literal(2.0 * M_PI) + " * torch.matmul(z, " +
                  w.tensor(net.fourier_matrix()) + ")");
    w.line(1, "z = torch.cat([torch.sin(p), torch.cos(p)], 1)");
  }
  if (o.modified) {
    const auto encoder = net.encoder_weights();
    const auto& bias = net.encoder_biases();
    w.line(1, "u = " + act + "(torch.addmm(" + w.tensor(bias[0]) + ", z, " + w.tensor(encoder[0]) +
                  ".t()))");
    w.line(1, "v = " + act + "(torch.addmm(" + w.tensor(bias[1]) + ", z, " + w.tensor(encoder[1]) +
                  ".t()))");
  }
  const auto weights = net.weights();
  for (std::size_t layer = 0; layer < weights.size(); ++layer) {
    w.line(1, "z = torch.addmm(" + w.tensor(net.biases()[layer]) + ", z, " +
                  w.tensor(weights[layer]) + ".t())");
    if (layer + 1 == weights.size()) break;
    if (!net.slopes().empty())
      w.line(1, "z = z * (" + literal(*o.adaptive_scale) + " * " + w.tensor(net.slopes()[layer]) +
                    ")");
    w.line(1, "z = " + act + "(z)");
    if (o.modified) w.line(1, "z = v + z * (u - v)");
  }
  w.line(1, "return z");
}

/// def network_<id>(self, x): every field's column from its part, each part an MLP of its own
/// input columns (FieldNetworksImpl::forward).
void write_field_networks(ScriptWriter& w, const nn::FieldNetworksImpl& net, int id) {
  const std::string prefix = "network_" + std::to_string(id);
  const auto& parts = net.parts();
  for (std::size_t k = 0; k < parts.size(); ++k)
    write_mlp(w, *net.network(k), prefix + "_" + parts[k].name);
  w.line(0, "def " + prefix + "(self, x):");
  std::vector<std::string> columns(static_cast<std::size_t>(net.outputs()));
  for (std::size_t k = 0; k < parts.size(); ++k) {
    std::string inputs;
    for (int column : parts[k].inputs) inputs += "x[:, " + std::to_string(column) + "], ";
    const std::string out = "o" + std::to_string(k);
    w.line(1,
           out + " = self." + prefix + "_" + parts[k].name + "(torch.stack([" + inputs + "], 1))");
    for (std::size_t j = 0; j < parts[k].fields.size(); ++j)
      columns[static_cast<std::size_t>(parts[k].fields[j])] =
          out + "[:, " + std::to_string(j) + "]";
  }
  std::string stacked;
  for (const auto& column : columns) stacked += column + ", ";
  w.line(1, "return torch.stack([" + stacked + "], 1)");
}

/// def network_<id>(self, x): the windowed sum, level by level, each level's subdomain networks
/// evaluated at every point as one batch (dense, unlike training's gathered batches; a
/// network's window is zero outside its support).
void write_fbpinn(ScriptWriter& w, const nn::FbpinnImpl& net, int id) {
  const auto& o = net.options();
  const std::string act = activation_call(o.activation);
  const std::string centres = w.tensor(net.centres()), radii = w.tensor(net.radii()),
                    windowed = w.tensor(net.windowed());
  std::vector<std::string> weights, biases;
  for (const auto& t : net.stacked_weights()) weights.push_back(w.tensor(t));
  for (const auto& t : net.stacked_biases()) biases.push_back(w.tensor(t));
  w.line(0, "def network_" + std::to_string(id) + "(self, x):");
  w.line(1, "out = x.new_zeros([x.size(0), " + std::to_string(o.outputs) + "])");
  for (std::size_t level = 0; level < o.levels.size(); ++level) {
    const auto first = std::to_string(net.level_first(level));
    const auto end = std::to_string(net.level_first(level + 1));
    const std::string range = "[" + first + ":" + end + "]";
    w.line(1, "t = (x.unsqueeze(0) - " + centres + range + ".unsqueeze(1).to(x.dtype)) / " + radii +
                  range + ".unsqueeze(1).to(x.dtype)");
    w.line(1, "cut = " + windowed + range + ".unsqueeze(1) > 0.5");
    w.line(1, "inside = (((t > -1.0) & (t < 1.0)) | torch.logical_not(cut)).all(2)");
    w.line(1, "bump = torch.square(0.5 + 0.5 * torch.cos(" + literal(M_PI) + " * t))");
    w.line(1, "raw = torch.where(cut, bump, torch.ones_like(t)).prod(2) * inside.to(x.dtype)");
    w.line(1, "total = raw.sum(0)");
    w.line(1, "window = raw / torch.where(total > 0, total, torch.ones_like(total))");
    w.line(1, "h = t");
    for (std::size_t layer = 0; layer < weights.size(); ++layer) {
      w.line(1, "h = torch.baddbmm(" + biases[layer] + range + ", h, " + weights[layer] + range +
                    ".transpose(1, 2))");
      if (layer + 1 < weights.size()) w.line(1, "h = " + act + "(h)");
    }
    w.line(1, "out = out + (h * window.unsqueeze(2)).sum(0)");
  }
  w.line(1, "return out");
}

/// def subdomain_<id>(self, x): the fields, u = g + phi N where conditions are exact
/// (ExactConditions::apply at order 0).
void write_fields(ScriptWriter& w, const train::SubdomainModel& model, int fields) {
  const auto id = std::to_string(model.id);
  w.line(0, "def subdomain_" + id + "(self, x):");
  w.line(1, "n = self.network_" + id + "(x)");
  const auto* exact = model.fields->exact();
  if (!exact) {
    w.line(1, "return n");
    return;
  }
  w.line(1, "columns: List[Tensor] = []");
  for (int f = 0; f < fields; ++f) {
    const std::string network = "n[:, " + std::to_string(f) + "]";
    const physics::ExactField* constrained = nullptr;
    for (const auto& field : exact->fields())
      if (field.field == f) constrained = &field;
    if (!constrained) {
      w.line(1, "columns.append(" + network + ")");
      continue;
    }
    const auto& pieces = constrained->pieces;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      std::string d;
      for (const auto& factor : pieces[i].factors)
        d += std::string(d.empty() ? "" : " * ") + "(" + literal(factor.sign) + " * (x[:, " +
             std::to_string(factor.input) + "] - " + literal(factor.origin) + ") / " +
             literal(factor.length) + ")";
      w.line(1, "d" + std::to_string(i) + " = " + d);
      w.line(1, "g" + std::to_string(i) + " = " + pieces[i].value.torchscript("x"));
    }
    std::string phi = "d0";
    for (std::size_t i = 1; i < pieces.size(); ++i) phi += " * d" + std::to_string(i);
    if (pieces.size() == 1) {
      w.line(1, "columns.append(g0 + " + phi + " * " + network + ")");
      continue;
    }
    // Transfinite interpolation of the values, with the floor that keeps corners finite.
    w.line(1, "total = torch.zeros_like(d0)");
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      std::string product = "torch.ones_like(d0)";
      for (std::size_t j = 0; j < pieces.size(); ++j)
        if (j != i) product += " * d" + std::to_string(j);
      w.line(1, "w" + std::to_string(i) + " = " + product + " + 1e-12");
      w.line(1, "total = total + w" + std::to_string(i));
    }
    w.line(1, "extension = torch.zeros_like(d0)");
    for (std::size_t i = 0; i < pieces.size(); ++i)
      w.line(1,
             "extension = extension + w" + std::to_string(i) + " / total * g" + std::to_string(i));
    w.line(1, "columns.append(extension + " + phi + " * " + network + ")");
  }
  w.line(1, "return torch.stack(columns, 1)");
}

}  // namespace

ScriptedModel script_model(const Setup& setup, const std::vector<train::SubdomainModel*>& models) {
  const auto& problem = setup.problem;
  const auto& partition = setup.decomposition.partition;
  const int fields = static_cast<int>(problem.symbols.fields.size());
  TESSERA_CHECK(static_cast<int>(models.size()) == partition.size(),
                "export: " << models.size() << " of " << partition.size() << " subdomains held");
  ScriptWriter w;
  const auto dtype = models.front()->network->parameters().front().scalar_type();
  const std::string dtype_name = dtype == torch::kFloat64 ? "double" : "float";
  // Which subdomain holds each point, as Partition::subdomain_of: inside the box (clamped), the
  // lowest id whose box holds it.
  std::vector<double> lower, upper;
  for (const auto& s : partition.subdomains())
    for (int d = 0; d < s.box.dims(); ++d)
      lower.push_back(s.box.lo[d]), upper.push_back(s.box.hi[d]);
  const auto boxes = static_cast<int64_t>(partition.size());
  const std::string lo = w.tensor(torch::tensor(lower, torch::kFloat64).view({boxes, -1}));
  const std::string hi = w.tensor(torch::tensor(upper, torch::kFloat64).view({boxes, -1}));
  w.line(0, "def owner(self, points):");
  w.line(1, "p = torch.maximum(torch.minimum(points, " + hi + ".max(0)[0]), " + lo + ".min(0)[0])");
  w.line(1, "o = points[:, 0].long() * 0");
  for (int s = partition.size() - 1; s >= 0; --s)
    w.line(1, "o = torch.where(((p >= " + lo + "[" + std::to_string(s) + "]) & (p <= " + hi + "[" +
                  std::to_string(s) + "])).all(1), " + std::to_string(s) + ", o)");
  w.line(1, "return o");

  w.line(0, "def forward(self, points):");
  w.line(1, "points = points.double()");
  w.line(1, "o = self.owner(points)");
  w.line(1, "x = points." + dtype_name + "()");
  w.line(1,
         "out = points.new_full([points.size(0), " + std::to_string(fields) + "], float('nan'))");
  for (const auto* model : models) {
    const auto id = std::to_string(model->id);
    w.line(1, "i = torch.nonzero(o == " + id + ").squeeze(1)");
    w.line(1, "if i.numel() > 0:");
    w.line(2, "out[i] = self.subdomain_" + id + "(x[i]).double()");
  }
  w.line(1, "return out");

  for (const auto* model : models) {
    if (const auto* mlp = dynamic_cast<const nn::MlpImpl*>(model->network.get()))
      write_mlp(w, *mlp, "network_" + std::to_string(model->id));
    else if (const auto* parts = dynamic_cast<const nn::FieldNetworksImpl*>(model->network.get()))
      write_field_networks(w, *parts, model->id);
    else if (const auto* fbpinn = dynamic_cast<const nn::FbpinnImpl*>(model->network.get()))
      write_fbpinn(w, *fbpinn, model->id);
    else
      TESSERA_FAIL("export: subdomain " << model->id << "'s network has no TorchScript form");
    write_fields(w, *model, fields);
  }
  return w.finish();
}

void save_scripted_model(const ScriptedModel& model, const Setup& setup, const std::string& path) {
  torch::jit::Module module("TesseraModel");
  for (std::size_t k = 0; k < model.buffers.size(); ++k)
    module.register_buffer("b" + std::to_string(k), model.buffers[k]);
  c10::List<std::string> inputs, fields;
  for (const auto& name : setup.problem.domain->input_names()) inputs.push_back(name);
  for (const auto& name : setup.problem.symbols.fields) fields.push_back(name);
  module.register_attribute("inputs", c10::ListType::ofStrings(), inputs);
  module.register_attribute("fields", c10::ListType::ofStrings(), fields);
  module.register_attribute("case_name", c10::StringType::get(), setup.input.name);
  try {
    module.define(model.source);
  } catch (const c10::Error& e) {
    TESSERA_FAIL("export: the generated TorchScript does not compile (a Tessera bug): "
                 << e.what_without_backtrace());
  }
  try {
    module.save(path);
  } catch (const c10::Error& e) {
    throw io::WriteError("cannot write '" + path + "': " + e.what_without_backtrace());
  }
}

}  // namespace tessera::app
