// "training": collocation, derivatives, stages (each optimizer takes its own keys), weights
// (fixed per loss term, or adaptive), logging, checkpoints and the time limit.
#include <algorithm>

#include "tessera/core/text.hpp"
#include "tessera/io/case_detail.hpp"
#include "tessera/io/optimizers.hpp"

namespace tessera::io::detail {

namespace {

/// Refuses a key that `optimizer` does not take, naming the optimizers that do.
void refuse_foreign_keys(const JsonNode& node, const OptimizerSpec& optimizer) {
  for (const auto& [key, child] : node.members()) {
    if (optimizer.takes(key)) continue;
    std::vector<std::string> takers;
    for (const auto& other : optimizers())
      if (other.takes(key)) takers.push_back(other.name);
    std::string who;
    for (std::size_t i = 0; i < takers.size(); ++i)
      who += (i == 0 ? "" : i + 1 == takers.size() ? " and " : ", ") + takers[i];
    child.fail(std::string("not a key of ") + optimizer.article + " " + optimizer.name +
               " stage (only " + who + (takers.size() == 1 ? " takes" : " take") + " it); " +
               optimizer.name + " takes " + quoted_list(optimizer.keys));
  }
}

void read_precision(const JsonNode& node, StageSpec& stage) {
  if (const JsonNode dtype = node["dtype"]; dtype.present())
    stage.dtype = dtype.option<FloatType>();
  if (const JsonNode precision = node["precision"]; precision.present()) {
    stage.precision = precision.option<Precision>();
    const bool fp64 = *stage.precision == Precision::fp64;
    if (stage.dtype && (*stage.dtype == FloatType::float64) != fp64)
      precision.fail(std::string("\"") + name(*stage.precision) +
                     "\" does not go with \"dtype\": \"" + name(*stage.dtype) +
                     "\" in the same stage; give only \"precision\" (" +
                     "\"fp64\" is float64, the others float32)");
  }
}

/// The keys only some optimizers take, each read where the stage's optimizer takes it.
void read_optimizer_keys(const JsonNode& node, StageSpec& stage) {
  const OptimizerSpec& optimizer = *stage.optimizer;
  if (const JsonNode decay = node["decay"]; decay.present()) {
    decay.check_object(keys_at("training.stages[].decay"));
    DecaySpec d;
    d.rate =
        decay.required("rate", "\"rate\": 0.9 (the factor applied to lr)").number(Range::positive);
    d.every = decay["every"].integer(1, d.every);
    stage.decay = d;
  }
  if (const JsonNode warmup = node["warmup"]; warmup.present()) stage.warmup = warmup.integer(0);
  if (const JsonNode clip = node["clip"]; clip.present()) stage.clip = clip.number(Range::positive);
  if (optimizer.takes("history")) stage.history = node["history"].integer(1, stage.history);
  if (optimizer.takes("scaling")) stage.scaling = node["scaling"].option(stage.scaling);
  if (optimizer.takes("tolerance"))
    stage.tolerance = node["tolerance"].number(Range::non_negative, optimizer.tolerance);
  if (const JsonNode hessian = node["hessian"]; hessian.present())
    stage.hessian = hessian.option<HessianLayout>();
}

StageSpec read_stage(const JsonNode& node) {
  if (!node.present() || !node.value().is_object())
    node.fail(
        "expected a stage object such as {\"optimizer\": \"adam\", \"iterations\": 1000}, "
        "got " +
        node.describe());
  node.check_object(keys_at("training.stages[]"));  // misspelt keys first, with a hint
  StageSpec stage;
  stage.key = node.key();
  const auto names = optimizer_names();
  std::string spelled;
  for (std::size_t i = 0; i < names.size(); ++i)
    spelled += (i == 0 ? "\"" : i + 1 == names.size() ? " or \"" : ", \"") + names[i] + "\"";
  const std::string optimizer =
      node.required("optimizer", "\"optimizer\": " + spelled).choice(names);
  stage.optimizer = find_optimizer(optimizer);
  refuse_foreign_keys(node, *stage.optimizer);
  stage.iterations = node["iterations"].integer(1, stage.iterations);
  stage.lr = node["lr"].number(Range::positive, stage.optimizer->lr);
  if (const JsonNode points = node["points"]; points.present())
    stage.collocation_points = points.integer(1);
  read_precision(node, stage);
  read_optimizer_keys(node, stage);
  return stage;
}

void read_weights(const JsonNode& node, const Case& c, WeightingSpec& w) {
  std::vector<std::string> terms;
  for (const auto& eq : c.equations) terms.push_back(eq.name);
  for (const auto& cond : c.conditions) terms.push_back(cond.name);
  const std::vector<std::string> interface = {"continuity", "residual_jump", "flux", "gradient"};
  std::vector<std::string> valid = terms;
  valid.insert(valid.end(), interface.begin(), interface.end());
  for (const auto& k : keys_at("training.weights")) valid.push_back(k);

  for (const auto& [key, child] : node.members()) {
    if (key == "adaptive") {
      w.adaptive = child.option<WeightBalancing>();
    } else if (key == "adaptive_every") {
      w.adaptive_every = child.integer(1);
    } else if (key == "adaptive_alpha") {
      w.adaptive_alpha = child.number(Range::non_negative);
      if (!(w.adaptive_alpha < 1))
        child.fail("expected a number in [0, 1), got " + child.describe());
    } else if (std::find(terms.begin(), terms.end(), key) != terms.end()) {
      w.fixed[key] = child.number(Range::non_negative);
    } else if (std::find(interface.begin(), interface.end(), key) != interface.end()) {
      if (c.decomposition.method == DecompositionMethod::none ||
          c.decomposition.method == DecompositionMethod::fbpinn)
        child.fail(
            "interface loss terms exist only with a decomposition into subdomains that meet at "
            "interfaces; set decomposition.method to \"xpinn\" or \"cpinn\", or remove this "
            "weight");
      w.fixed[key] = child.number(Range::non_negative);
    } else {
      child.fail("not a loss term; the terms are " + quoted_list(terms) +
                 (c.decomposition.method == DecompositionMethod::none ||
                          c.decomposition.method == DecompositionMethod::fbpinn
                      ? ""
                      : " and " + quoted_list(interface)) +
                 ", or use \"adaptive\": \"grad_norm\"" + suggest(key, valid));
    }
  }
  for (const char* k : {"adaptive_every", "adaptive_alpha"})
    if (node[k].present() && w.adaptive == WeightBalancing::none)
      node[k].fail("not used with \"adaptive\": \"none\" (fixed weights); remove one of them");
}

std::optional<AdaptiveSamplingSpec> read_adaptive_sampling(const JsonNode& node) {
  AdaptiveSamplingSpec spec;
  if (node.value().is_boolean()) {
    if (!node.boolean()) return std::nullopt;
    return spec;
  }
  if (!node.value().is_object())
    node.fail(
        "expected true, false or an object such as {\"every\": 1000, \"candidates\": 8}, got " +
        node.describe());
  node.check_object(keys_at("training.collocation.adaptive"));
  spec.every = node["every"].integer(1, spec.every);
  spec.candidates = node["candidates"].integer(1, spec.candidates);
  spec.exponent = node["exponent"].number(Range::non_negative, spec.exponent);
  spec.constant = node["constant"].number(Range::non_negative, spec.constant);
  spec.across_subdomains = node["across_subdomains"].boolean(spec.across_subdomains);
  return spec;
}

void read_causal(const JsonNode& node, const Case& c, CausalSpec& causal) {
  if (!node.value().is_object())
    node.fail("expected an object such as {\"chunks\": 32, \"tolerance\": 1}, got " +
              node.describe());
  node.check_object(keys_at("training.causal"));
  if (const JsonNode enabled = node["enabled"]; enabled.present())
    causal.enabled = enabled.boolean();
  causal.chunks = node["chunks"].integer(1, causal.chunks);
  causal.tolerance = node["tolerance"].number(Range::non_negative, causal.tolerance);
  if (causal.enabled.value_or(true) && !c.time)
    node.fail("causal weights need time; this problem has no \"time\" (remove \"causal\")");
}

void read_batch(const JsonNode& node, BatchSpec& batch) {
  const std::string example = "{\"points\": 8192} or {\"memory\": \"2G\"}";
  if (!node.value().is_object())
    node.fail("expected an object such as " + example + ", got " + node.describe());
  node.check_object(keys_at("training.batch"));
  const JsonNode points = node["points"], memory = node["memory"];
  if (points.present() == memory.present())
    node.fail("give either \"points\" (per part of a pass) or \"memory\" (per rank), e.g. " +
              example);
  if (points.present()) batch.points = points.integer(1);
  if (!memory.present()) return;
  const auto bytes = memory.value().is_number()
                         ? std::optional<double>(memory.number(Range::positive))
                         : core::parse_byte_size(memory.string());
  if (!bytes)
    memory.fail("expected a size in bytes or with K, M, G or T, e.g. \"2G\", got " +
                memory.describe());
  batch.memory_bytes = bytes;
}

/// The stages of a case with a budget, before the run sets their iteration counts: Adam with
/// its defaults, then the SSBroyden finish (app/model.cpp swaps in L-BFGS where a dense inverse
/// Hessian does not fit).
std::vector<StageSpec> planned_stages() {
  std::vector<StageSpec> stages(2);
  for (std::size_t k = 0; k < stages.size(); ++k) {
    stages[k].optimizer = find_optimizer(k == 0 ? "adam" : "ssbroyden");
    stages[k].lr = stages[k].optimizer->lr;
    stages[k].tolerance = stages[k].optimizer->tolerance;
    stages[k].key = "training.budget";
  }
  return stages;
}

}  // namespace

void read_training(const JsonNode& root, Case& c) {
  const JsonNode node = root.required(
      "training", "\"training\": {\"stages\": [{\"optimizer\": \"adam\", \"iterations\": 1000}]}");
  node.check_object(keys_at("training"));
  TrainingSpec& t = c.training;

  if (const JsonNode collocation = node["collocation"]; collocation.present()) {
    collocation.check_object(keys_at("training.collocation"));
    CollocationSpec& col = t.collocation;
    col.points = collocation["points"].integer(1, col.points);
    col.sampler = collocation["sampler"].option(col.sampler);
    col.resample_every = collocation["resample_every"].integer(0, col.resample_every);
    if (const JsonNode adaptive = collocation["adaptive"]; adaptive.present()) {
      col.adaptive = read_adaptive_sampling(adaptive);
      col.adaptive_given = true;
    }
  }
  // The overlapping subdomains' small networks train better on uniform redraws than on the
  // residual-based distribution (docs/validation.md, FBPINN): RAD leaves supports thinly
  // sampled, where a local network is free to drift.
  if (!t.collocation.adaptive_given && c.decomposition.method == DecompositionMethod::fbpinn)
    t.collocation.adaptive.reset();
  if (const JsonNode causal = node["causal"]; causal.present()) read_causal(causal, c, t.causal);
  t.derivatives = node["derivatives"].option(t.derivatives);

  const JsonNode stages = node["stages"], budget = node["budget"];
  if (stages.present() && budget.present())
    budget.fail(
        "give either \"stages\" or \"budget\" (which plans the stages); to stop staged "
        "training at a wall time, use \"time_limit\"");
  if (budget.present()) {
    t.budget = budget.number(Range::positive);
    t.stages = planned_stages();
  } else {
    node.required("stages",
                  "\"stages\": [{\"optimizer\": \"adam\", \"iterations\": 1000}] (run in "
                  "order), or \"budget\": 600 (seconds of training: Tessera plans the stages)");
    for (const auto& stage : stages.elements(1, "stage")) t.stages.push_back(read_stage(stage));
  }

  if (const JsonNode weights = node["weights"]; weights.present())
    read_weights(weights, c, t.weights);
  t.log_every = node["log_every"].integer(1, t.log_every);
  t.checkpoint_every = node["checkpoint_every"].integer(0, t.checkpoint_every);
  // Checkpoints are taken at log iterations (where every rank already meets).
  if (t.checkpoint_every % t.log_every != 0)
    node["checkpoint_every"].fail(
        "must be a multiple of training.log_every (" + std::to_string(t.log_every) + "), e.g. " +
        std::to_string((t.checkpoint_every / t.log_every + 1) * t.log_every));
  if (const JsonNode limit = node["time_limit"]; limit.present())
    t.time_limit = limit.number(Range::positive);
  if (const JsonNode batch = node["batch"]; batch.present()) read_batch(batch, t.batch);
  const bool fbpinn = c.decomposition.method == DecompositionMethod::fbpinn;
  for (std::size_t k = 0; k < t.stages.size(); ++k)
    if (fbpinn && t.stages[k].precision == Precision::bf16)
      stages.elements()[k]["precision"].fail(
          "the batched products of \"fbpinn\" have no bfloat16 path; use \"fp32\" or \"tf32\"");
  for (std::size_t k = 0; k < t.stages.size(); ++k)
    if (t.stages[k].precision == Precision::bf16 && t.derivatives == DerivativeChoice::taylor)
      stages.elements()[k]["precision"].fail(
          "\"bf16\" runs on the reverse engine (the forward Taylor engine's kernels are "
          "float32/float64); set training.derivatives to \"auto\" or \"autograd\"");
}

}  // namespace tessera::io::detail
