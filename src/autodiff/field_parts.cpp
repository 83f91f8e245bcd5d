#include "tessera/autodiff/field_parts.hpp"

#include <algorithm>
#include <optional>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff {

namespace {

/// `wanted` in the numbering of a part that reads `inputs` as output `output`; nullopt when it
/// is zero there.
std::optional<Partial> in_part(const Partial& wanted, const std::vector<int>& inputs, int output) {
  Partial mine{output, {}, wanted.laplacian};
  for (int axis : wanted.wrt) {
    const auto at = std::find(inputs.begin(), inputs.end(), axis);
    if (at != inputs.end())
      mine.wrt.push_back(static_cast<int>(at - inputs.begin()));
    else if (!wanted.laplacian)
      return std::nullopt;  // a derivative along an input the part does not read
  }
  if (!mine.laplacian) return mine;
  // A Laplacian's missing axes add zero; one left is a plain second derivative.
  if (mine.wrt.empty()) return std::nullopt;
  if (mine.wrt.size() == 1) return Partial{output, {mine.wrt[0], mine.wrt[0]}, false};
  return mine;
}

}  // namespace

Partials parts_partials(const std::vector<PartEngine>& parts, const torch::Tensor& x,
                        const std::set<Partial>& requested, bool create_graph) {
  Partials result;
  for (const auto& part : parts) {
    // What each part is asked, and which requests each of its partials answers.
    std::set<Partial> asked;
    std::vector<std::pair<Partial, Partial>> answers;  // (request, the part's partial)
    for (const auto& wanted : requested) {
      const auto at = std::find(part.outputs.begin(), part.outputs.end(), wanted.output);
      if (at == part.outputs.end()) continue;
      const auto mine = in_part(wanted, part.inputs, static_cast<int>(at - part.outputs.begin()));
      if (!mine) {
        result[wanted] = torch::zeros({x.size(0)}, x.options().requires_grad(false));
        continue;
      }
      asked.insert(*mine);
      answers.emplace_back(wanted, *mine);
    }
    if (asked.empty()) continue;
    const bool whole = static_cast<int64_t>(part.inputs.size()) == x.size(1);
    const auto columns =
        whole ? x
              : x.index_select(
                    1, torch::tensor(std::vector<int64_t>(part.inputs.begin(), part.inputs.end()),
                                     torch::TensorOptions(torch::kInt64))
                           .to(x.device()));
    auto partials = part.engine(part.function, columns, asked, create_graph);
    // Two requests may be one partial of the part (a Laplacian whose other axes it does not
    // read, and that axis's second derivative): the second gets its own tensor.
    std::set<Partial> handed;
    for (const auto& [wanted, mine] : answers) {
      const auto& tensor = partials.at(mine);
      result[wanted] = handed.insert(mine).second ? tensor : tensor.clone();
    }
  }
  for (const auto& wanted : requested)
    TESSERA_ASSERT(result.count(wanted), "output " << wanted.output << " is given by no part");
  return result;
}

}  // namespace tessera::autodiff
