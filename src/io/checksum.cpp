#include "tessera/io/checksum.hpp"

#include <cstdio>
#include <fstream>
#include <vector>

namespace tessera::io {

void Fnv1a64::update(const void* data, std::size_t size) {
  const auto* byte = static_cast<const unsigned char*>(data);
  uint64_t hash = hash_;
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= byte[i];
    hash *= 1099511628211ull;  // the FNV prime
  }
  hash_ = hash;
  bytes_ += size;
}

std::string Fnv1a64::hex() const {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
  return text;
}

std::optional<Fnv1a64> hash_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  Fnv1a64 hash;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    hash.update(block.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) return std::nullopt;
  return hash;
}

}  // namespace tessera::io
