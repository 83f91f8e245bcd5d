#include "tessera/expr/operations.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::expr {

namespace {

const FunctionInfo kFunctions[] = {
    {"sin", Function::sin, 1, 1},     {"cos", Function::cos, 1, 1},
    {"tan", Function::tan, 1, 1},     {"asin", Function::asin, 1, 1},
    {"acos", Function::acos, 1, 1},   {"atan", Function::atan, 1, 1},
    {"atan2", Function::atan2, 2, 2}, {"sinh", Function::sinh, 1, 1},
    {"cosh", Function::cosh, 1, 1},   {"tanh", Function::tanh, 1, 1},
    {"exp", Function::exp, 1, 1},     {"log", Function::log, 1, 1},
    {"sqrt", Function::sqrt, 1, 1},   {"abs", Function::abs, 1, 1},
    {"sign", Function::sign, 1, 1},   {"min", Function::min, 2, -1},
    {"max", Function::max, 2, -1},    {"pow", Function::pow, 2, 2},
    {"if", Function::if_, 3, 3},
};

}  // namespace

const FunctionInfo* find_function(const std::string& name) {
  for (const auto& info : kFunctions)
    if (name == info.name) return &info;
  return nullptr;
}

std::vector<std::string> function_names() {
  std::vector<std::string> names;
  for (const auto& info : kFunctions) names.emplace_back(info.name);
  for (const char* name : {"D", "lap", "d", "grad", "div", "dot", "vector"})
    names.emplace_back(name);
  return names;
}

const char* op_symbol(Op op) {
  switch (op) {
    case Op::add:
      return "+";
    case Op::subtract:
      return "-";
    case Op::multiply:
      return "*";
    case Op::divide:
      return "/";
    case Op::power:
      return "^";
    case Op::negate:
      return "-";
    case Op::less:
      return "<";
    case Op::less_equal:
      return "<=";
    case Op::greater:
      return ">";
    case Op::greater_equal:
      return ">=";
    case Op::equal:
      return "==";
    case Op::not_equal:
      return "!=";
  }
  return "?";
}

double apply(Op op, double a, double b) {
  switch (op) {
    case Op::add:
      return a + b;
    case Op::subtract:
      return a - b;
    case Op::multiply:
      return a * b;
    case Op::divide:
      return a / b;
    case Op::power:
      return std::pow(a, b);
    case Op::negate:
      return -a;
    case Op::less:
      return a < b ? 1.0 : 0.0;
    case Op::less_equal:
      return a <= b ? 1.0 : 0.0;
    case Op::greater:
      return a > b ? 1.0 : 0.0;
    case Op::greater_equal:
      return a >= b ? 1.0 : 0.0;
    case Op::equal:
      return a == b ? 1.0 : 0.0;
    case Op::not_equal:
      return a != b ? 1.0 : 0.0;
  }
  TESSERA_UNREACHABLE("expr: unhandled operator");
}

double apply(Function function, const std::vector<double>& args) {
  const double a = args[0];
  switch (function) {
    case Function::sin:
      return std::sin(a);
    case Function::cos:
      return std::cos(a);
    case Function::tan:
      return std::tan(a);
    case Function::asin:
      return std::asin(a);
    case Function::acos:
      return std::acos(a);
    case Function::atan:
      return std::atan(a);
    case Function::atan2:
      return std::atan2(a, args[1]);
    case Function::sinh:
      return std::sinh(a);
    case Function::cosh:
      return std::cosh(a);
    case Function::tanh:
      return std::tanh(a);
    case Function::exp:
      return std::exp(a);
    case Function::log:
      return std::log(a);
    case Function::sqrt:
      return std::sqrt(a);
    case Function::abs:
      return std::abs(a);
    case Function::sign:
      return std::isnan(a) ? a : static_cast<double>((a > 0) - (a < 0));
    case Function::min:
      return *std::min_element(args.begin(), args.end());
    case Function::max:
      return *std::max_element(args.begin(), args.end());
    case Function::pow:
      return std::pow(a, args[1]);
    case Function::if_:
      return a != 0.0 ? args[1] : args[2];
  }
  TESSERA_UNREACHABLE("expr: unhandled function");
}

torch::Tensor apply(Op op, const torch::Tensor& a, const torch::Tensor& b) {
  const auto dtype = a.scalar_type();
  switch (op) {
    case Op::add:
      return a + b;
    case Op::subtract:
      return a - b;
    case Op::multiply:
      return a * b;
    case Op::divide:
      return a / b;
    case Op::power:
      return torch::pow(a, b);
    case Op::negate:
      return -a;
    case Op::less:
      return torch::lt(a, b).to(dtype);
    case Op::less_equal:
      return torch::le(a, b).to(dtype);
    case Op::greater:
      return torch::gt(a, b).to(dtype);
    case Op::greater_equal:
      return torch::ge(a, b).to(dtype);
    case Op::equal:
      return torch::eq(a, b).to(dtype);
    case Op::not_equal:
      return torch::ne(a, b).to(dtype);
  }
  TESSERA_UNREACHABLE("expr: unhandled operator");
}

torch::Tensor apply(Function function, const std::vector<torch::Tensor>& args) {
  const torch::Tensor& a = args[0];
  switch (function) {
    case Function::sin:
      return torch::sin(a);
    case Function::cos:
      return torch::cos(a);
    case Function::tan:
      return torch::tan(a);
    case Function::asin:
      return torch::asin(a);
    case Function::acos:
      return torch::acos(a);
    case Function::atan:
      return torch::atan(a);
    case Function::atan2:
      return torch::atan2(a, args[1]);
    case Function::sinh:
      return torch::sinh(a);
    case Function::cosh:
      return torch::cosh(a);
    case Function::tanh:
      return torch::tanh(a);
    case Function::exp:
      return torch::exp(a);
    case Function::log:
      return torch::log(a);
    case Function::sqrt:
      return torch::sqrt(a);
    case Function::abs:
      return torch::abs(a);
    case Function::sign:
      return torch::sign(a);
    case Function::min: {
      torch::Tensor result = a;
      for (std::size_t i = 1; i < args.size(); ++i) result = torch::minimum(result, args[i]);
      return result;
    }
    case Function::max: {
      torch::Tensor result = a;
      for (std::size_t i = 1; i < args.size(); ++i) result = torch::maximum(result, args[i]);
      return result;
    }
    case Function::pow:
      return torch::pow(a, args[1]);
    case Function::if_:
      return torch::where(a != 0, args[1], args[2]);
  }
  TESSERA_UNREACHABLE("expr: unhandled function");
}

}  // namespace tessera::expr
