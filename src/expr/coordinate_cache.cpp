#include "tessera/expr/coordinate_cache.hpp"

#include <algorithm>

#include "tessera/core/torch_pch.hpp"

namespace tessera::expr {

namespace {

// Live point sets whose values are kept at most: the training point sets of a rank's
// subdomains number a few dozen; beyond this the oldest entry goes.
constexpr std::size_t max_entries = 256;

bool reads_coordinates_only(const Node& node) {
  switch (node.kind) {
    case NodeKind::number:
    case NodeKind::coordinate:
      return true;
    case NodeKind::unary:
    case NodeKind::binary:
    case NodeKind::call:
    case NodeKind::table:
      return std::all_of(node.children.begin(), node.children.end(),
                         [](const auto& child) { return reads_coordinates_only(*child); });
    case NodeKind::derivative:
    case NodeKind::parameter:
    case NodeKind::extra:
      return false;
  }
  return false;
}

bool applies_an_operation(const Node& node) {
  return node.kind == NodeKind::unary || node.kind == NodeKind::binary ||
         node.kind == NodeKind::call || node.kind == NodeKind::table;
}

void collect(const Node& node, bool root, std::vector<const Node*>& found) {
  if (!root && applies_an_operation(node) && reads_coordinates_only(node)) {
    found.push_back(&node);
    return;
  }
  for (const auto& child : node.children) collect(*child, false, found);
}

}  // namespace

CoordinateCache::CoordinateCache(const Node& root) { collect(root, true, subtrees_); }

int CoordinateCache::slot(const Node* node) const {
  const auto it = std::find(subtrees_.begin(), subtrees_.end(), node);
  return it == subtrees_.end() ? -1 : static_cast<int>(it - subtrees_.begin());
}

bool CoordinateCache::same_points(const Entry& entry, const torch::Tensor& x) const {
  return entry.storage._unsafe_get_target() == x.storage().unsafeGetStorageImpl() &&
         !entry.storage.expired() && entry.offset == x.storage_offset() &&
         entry.version == static_cast<int64_t>(x._version()) && x.sizes() == entry.sizes &&
         x.strides() == entry.strides && entry.dtype == x.scalar_type() &&
         entry.device == x.device();
}

std::vector<torch::Tensor>* CoordinateCache::values_at(const torch::Tensor& x) {
  if (subtrees_.empty() || x.requires_grad() || !x.has_storage()) return nullptr;
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const Entry& e) { return e.storage.expired(); }),
                 entries_.end());
  for (auto& entry : entries_)
    if (same_points(entry, x)) return &entry.values;
  if (entries_.size() >= max_entries) entries_.erase(entries_.begin());
  entries_.push_back({x.storage().getWeakStorageImpl(), x.storage_offset(),
                      static_cast<int64_t>(x._version()), x.sizes().vec(), x.strides().vec(),
                      x.scalar_type(), x.device(), std::vector<torch::Tensor>(subtrees_.size())});
  return &entries_.back().values;
}

}  // namespace tessera::expr
