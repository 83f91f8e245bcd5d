#pragma once
/// The case file's options as enums: parsed once, in io, so no other module compares option
/// strings. Each enum has one table of (value, spelling) pairs that serves both the reader
/// (which lists the spellings in its messages) and name(), which prints a value as the case
/// file spells it (summaries, run.json, output attributes).
#include <string>
#include <vector>

namespace tessera::io {

enum class FloatType { float32, float64 };
enum class Precision { fp32, tf32, bf16, fp64 };
enum class HessianLayout { joint, blocks };
enum class HistoryScaling { self, none, broyden };
enum class DeviceChoice { automatic, cpu, cuda };
enum class ShapeKind { interval, box, disk, ball, polygon, mesh, union_, intersection, difference };
enum class ConditionKind { dirichlet, neumann, robin, initial, periodic, data, residual };
enum class DecompositionMethod { none, xpinn, cpinn, fbpinn };
enum class Balance { cuts, measure };
enum class ActivationChoice { tanh, sin, gelu, silu };
enum class ArchitectureChoice { mlp, modified_mlp };
enum class InitChoice { xavier_normal, xavier_uniform };
enum class SamplerChoice { uniform, lhs, sobol };
enum class DerivativeChoice { automatic, autograd, taylor };
enum class WeightBalancing { none, grad_norm };
enum class InterpolationChoice { linear, nearest };

/// The spellings of every enum above, in declaration order.
template <typename E>
struct OptionNames;

#define TESSERA_OPTION_NAMES(E, ...)                      \
  template <>                                             \
  struct OptionNames<E> {                                 \
    static constexpr const char* names[] = {__VA_ARGS__}; \
  }

TESSERA_OPTION_NAMES(FloatType, "float32", "float64");
TESSERA_OPTION_NAMES(Precision, "fp32", "tf32", "bf16", "fp64");
TESSERA_OPTION_NAMES(HessianLayout, "joint", "blocks");
TESSERA_OPTION_NAMES(HistoryScaling, "self", "none", "broyden");
TESSERA_OPTION_NAMES(DeviceChoice, "auto", "cpu", "cuda");
TESSERA_OPTION_NAMES(ShapeKind, "interval", "box", "disk", "ball", "polygon", "mesh", "union",
                     "intersection", "difference");
TESSERA_OPTION_NAMES(ConditionKind, "dirichlet", "neumann", "robin", "initial", "periodic", "data",
                     "residual");
TESSERA_OPTION_NAMES(DecompositionMethod, "none", "xpinn", "cpinn", "fbpinn");
TESSERA_OPTION_NAMES(Balance, "cuts", "measure");
TESSERA_OPTION_NAMES(ActivationChoice, "tanh", "sin", "gelu", "silu");
TESSERA_OPTION_NAMES(ArchitectureChoice, "mlp", "modified_mlp");
TESSERA_OPTION_NAMES(InitChoice, "xavier_normal", "xavier_uniform");
TESSERA_OPTION_NAMES(SamplerChoice, "uniform", "lhs", "sobol");
TESSERA_OPTION_NAMES(DerivativeChoice, "auto", "autograd", "taylor");
TESSERA_OPTION_NAMES(WeightBalancing, "none", "grad_norm");
TESSERA_OPTION_NAMES(InterpolationChoice, "linear", "nearest");

#undef TESSERA_OPTION_NAMES

/// The value as the case file spells it ("xpinn", "float64", "union").
template <typename E>
const char* name(E value) {
  return OptionNames<E>::names[static_cast<std::size_t>(value)];
}

/// Every spelling of E, for messages and the reader.
template <typename E>
std::vector<std::string> names_of() {
  return {std::begin(OptionNames<E>::names), std::end(OptionNames<E>::names)};
}

/// The value E spells `word`; false when none does.
template <typename E>
bool parse_option(const std::string& word, E& value) {
  const auto all = names_of<E>();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i] == word) {
      value = static_cast<E>(i);
      return true;
    }
  return false;
}

}  // namespace tessera::io
