#pragma once
/// The operators and functions of the expression language, on doubles (constant folding,
/// evaluate_constant) and on tensors (evaluation). Both follow the same definitions.
#include <string>
#include <vector>

#include <torch/types.h>

namespace tessera::expr {

enum class Op {
  add,
  subtract,
  multiply,
  divide,
  power,
  negate,
  less,
  less_equal,
  greater,
  greater_equal,
  equal,
  not_equal
};

enum class Function {
  sin,
  cos,
  tan,
  asin,
  acos,
  atan,
  atan2,
  sinh,
  cosh,
  tanh,
  exp,
  log,
  sqrt,
  abs,
  sign,
  min,
  max,
  pow,
  if_
};

/// A function's name and how many arguments it takes (max_args = -1: no upper limit).
struct FunctionInfo {
  const char* name;
  Function function;
  int min_args;
  int max_args;
};

/// The function called `name`, or nullptr.
const FunctionInfo* find_function(const std::string& name);

/// Every name that may be called: the functions, the derivative forms D and lap, and the
/// operators d, grad, div, dot and vector. None may name a symbol.
std::vector<std::string> function_names();

/// The spelling of an operator, e.g. "<=".
const char* op_symbol(Op op);

/// `op` on doubles; comparisons give 1.0 or 0.0. Unary ops read only `a`.
double apply(Op op, double a, double b = 0.0);

/// `function` on doubles; `args` has a valid count (checked by the parser).
double apply(Function function, const std::vector<double>& args);

/// `op` on tensors (0-d or [n], broadcast); comparisons give 0/1 in the dtype of `a`.
torch::Tensor apply(Op op, const torch::Tensor& a, const torch::Tensor& b = {});

/// `function` on tensors (0-d or [n], broadcast); if(c, a, b) = where(c != 0, a, b), which
/// evaluates both branches: a NaN gradient in the branch not taken (sqrt(x) at x < 0) still
/// reaches the inputs, as with torch::where.
torch::Tensor apply(Function function, const std::vector<torch::Tensor>& args);

}  // namespace tessera::expr
