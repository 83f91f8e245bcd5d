#pragma once
/// FNV-1a with 64 bits: the checksum that checkpoint manifests record per file
/// (docs/output-format.md, "Checkpoints"). It finds truncated, overwritten or bit-flipped files;
/// it is not meant to resist deliberate tampering.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tessera::io {

/// A running FNV-1a 64 hash and the number of bytes it has seen, fed in pieces as a file is
/// written or read.
class Fnv1a64 {
 public:
  void update(const void* data, std::size_t size);
  uint64_t bytes() const { return bytes_; }
  /// The hash as 16 lowercase hexadecimal digits, as the manifest writes it.
  std::string hex() const;

 private:
  uint64_t hash_ = 14695981039346656037ull;  // the FNV offset basis
  uint64_t bytes_ = 0;
};

/// The hash of the whole file at `path`, or nullopt when it cannot be opened or read.
std::optional<Fnv1a64> hash_file(const std::string& path);

}  // namespace tessera::io
