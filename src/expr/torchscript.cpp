// Expressions written as TorchScript, so that an exported model (tessera export) carries the
// exactly enforced conditions' values as code. Every leaf becomes a tensor [n], so every
// operator and function below applies to tensors, as in evaluate.cpp.
#include <cmath>
#include <cstdio>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/expr/ast.hpp"
#include "tessera/expr/expression.hpp"

namespace tessera::expr {
namespace {

std::string number(double value, const std::string& points) {
  char text[40];
  if (std::isnan(value))
    std::snprintf(text, sizeof text, "float('nan')");
  else if (std::isinf(value))
    std::snprintf(text, sizeof text, "float('%sinf')", value < 0 ? "-" : "");
  else
    std::snprintf(text, sizeof text, "%.17e", value);
  return "torch.full_like(" + points + "[:, 0], " + text + ")";
}

const char* torch_function(Function function) {
  switch (function) {
    case Function::sin:
      return "torch.sin";
    case Function::cos:
      return "torch.cos";
    case Function::tan:
      return "torch.tan";
    case Function::asin:
      return "torch.asin";
    case Function::acos:
      return "torch.acos";
    case Function::atan:
      return "torch.atan";
    case Function::atan2:
      return "torch.atan2";
    case Function::sinh:
      return "torch.sinh";
    case Function::cosh:
      return "torch.cosh";
    case Function::tanh:
      return "torch.tanh";
    case Function::exp:
      return "torch.exp";
    case Function::log:
      return "torch.log";
    case Function::sqrt:
      return "torch.sqrt";
    case Function::abs:
      return "torch.abs";
    case Function::sign:
      return "torch.sign";
    case Function::min:
      return "torch.minimum";
    case Function::max:
      return "torch.maximum";
    case Function::pow:
      return "torch.pow";
    case Function::if_:
      return "torch.where";
  }
  return "";
}

/// The torch function of a comparison, or nullptr for the arithmetic operators.
const char* comparison(Op op) {
  switch (op) {
    case Op::less:
      return "torch.lt";
    case Op::less_equal:
      return "torch.le";
    case Op::greater:
      return "torch.gt";
    case Op::greater_equal:
      return "torch.ge";
    case Op::equal:
      return "torch.eq";
    case Op::not_equal:
      return "torch.ne";
    case Op::add:
    case Op::subtract:
    case Op::multiply:
    case Op::divide:
    case Op::power:
    case Op::negate:
      break;
  }
  return nullptr;
}

std::string source(const Node& node, const std::string& points, const std::string& key) {
  auto child = [&](std::size_t k) { return source(*node.children.at(k), points, key); };
  switch (node.kind) {
    case NodeKind::number:
      return number(node.value, points);
    case NodeKind::coordinate:
      return points + "[:, " + std::to_string(node.index) + "]";
    case NodeKind::unary:
      return "(-" + child(0) + ")";
    case NodeKind::binary: {
      const std::string a = child(0), b = child(1);
      if (node.op == Op::power) return "torch.pow(" + a + ", " + b + ")";
      // Comparisons give 0/1 in the points' dtype, as apply() in operations.cpp does.
      if (const char* compare = comparison(node.op))
        return std::string(compare) + "(" + a + ", " + b + ").to(" + points + ".dtype)";
      return "(" + a + " " + op_symbol(node.op) + " " + b + ")";
    }
    case NodeKind::call: {
      const std::string name = torch_function(node.function);
      if (node.function == Function::if_)
        return name + "(" + child(0) + " != 0, " + child(1) + ", " + child(2) + ")";
      std::string text = child(0);
      if (node.function == Function::min || node.function == Function::max) {
        for (std::size_t k = 1; k < node.children.size(); ++k)
          text = name + "(" + text + ", " + child(k) + ")";
        return text;
      }
      for (std::size_t k = 1; k < node.children.size(); ++k) text += ", " + child(k);
      return name + "(" + text + ")";
    }
    case NodeKind::table:
      TESSERA_FAIL(key << ": tabulated data '" << node.table->name()
                       << "' cannot be exported: an exported model carries no data files");
    case NodeKind::derivative:
    case NodeKind::parameter:
    case NodeKind::extra:
      break;
  }
  TESSERA_FAIL(key << ": '" << node.name
                   << "' cannot be exported: an exported model's expressions read only the "
                      "coordinates and numbers");
}

}  // namespace

std::string Expression::torchscript(const std::string& points) const {
  TESSERA_CHECK(root_, key_ << ": empty expression");
  return source(*root_, points, key_);
}

}  // namespace tessera::expr
