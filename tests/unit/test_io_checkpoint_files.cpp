// Checkpoint files: the checksum the manifest records, which checkpoints count as damaged, and
// which ones pruning keeps.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tessera/io/checkpoint_files.hpp"
#include "tessera/io/checksum.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using tessera::io::CheckDepth;
using tessera::io::checkpoint_damage;
using tessera::io::Fnv1a64;

namespace {

/// An empty folder of its own under the system's temporary folder, removed at the end.
struct TemporaryFolder {
  fs::path path;
  explicit TemporaryFolder(const std::string& name)
      : path(fs::temp_directory_path() /
             ("tessera_test_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::string hex_of(const std::string& text) {
  Fnv1a64 hash;
  hash.update(text.data(), text.size());
  return hash.hex();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// A complete checkpoint of run `run_id` at `iteration` with one file, subdomain_0.pt, holding
/// `content`, and a manifest recording it (or listing no files, as manifests before checksums).
fs::path write_checkpoint(const fs::path& output, int64_t iteration, const std::string& content,
                          const std::string& run_id = "r", bool with_files = true) {
  const fs::path folder = tessera::io::checkpoint_directory(output.string(), iteration);
  fs::create_directories(folder);
  write_text(folder / "subdomain_0.pt", content);
  Fnv1a64 written;
  written.update(content.data(), content.size());
  json manifest = {{"iteration", iteration}, {"run", {{"run_id", run_id}}}};
  if (with_files) manifest["files"] = {{"subdomain_0.pt", tessera::io::file_record(written)}};
  tessera::io::write_manifest(folder.string(), manifest);
  return folder;
}

}  // namespace

TEST_CASE("the checksum is FNV-1a 64 and does not depend on how the bytes are split") {
  CHECK(hex_of("") == "cbf29ce484222325");
  CHECK(hex_of("a") == "af63dc4c8601ec8c");
  CHECK(hex_of("foobar") == "85944171f73967e8");
  Fnv1a64 pieces;
  pieces.update("foo", 3);
  pieces.update("bar", 3);
  CHECK(pieces.hex() == "85944171f73967e8");
  CHECK(pieces.bytes() == 6);
}

TEST_CASE("a checkpoint whose file differs from its manifest's record is damaged, and says how") {
  TemporaryFolder output("damage");
  const fs::path folder = write_checkpoint(output.path, 10, "abcdef");
  CHECK(checkpoint_damage(folder.string()) == "");

  write_text(folder / "subdomain_0.pt", "abc");
  CHECK(checkpoint_damage(folder.string()) == "subdomain_0.pt: 3 bytes, the manifest says 6");
  CHECK(checkpoint_damage(folder.string(), CheckDepth::sizes) ==
        "subdomain_0.pt: 3 bytes, the manifest says 6");

  write_text(folder / "subdomain_0.pt", "abcdeg");
  CHECK(checkpoint_damage(folder.string()) == "subdomain_0.pt: its FNV-1a 64 checksum is " +
                                                  hex_of("abcdeg") + ", the manifest says " +
                                                  hex_of("abcdef"));
  CHECK(checkpoint_damage(folder.string(), CheckDepth::sizes) == "");  // sizes only

  fs::remove(folder / "subdomain_0.pt");
  CHECK(checkpoint_damage(folder.string()).rfind("subdomain_0.pt: ", 0) == 0);

  write_text(folder / "manifest.json", "{\"iteration\": 10, \"files\": [");
  CHECK(checkpoint_damage(folder.string()) == "manifest.json: missing or not JSON");
}

TEST_CASE("a manifest written before checksums lists no files and counts as intact") {
  TemporaryFolder output("old_manifest");
  const fs::path folder = write_checkpoint(output.path, 10, "abcdef", "r", /*with_files=*/false);
  write_text(folder / "subdomain_0.pt", "abc");
  CHECK(checkpoint_damage(folder.string()) == "");
  CHECK(tessera::io::newest_intact_checkpoint(output.path.string()).directory == folder.string());
}

TEST_CASE("the newest intact checkpoint skips damaged and incomplete ones and names them") {
  TemporaryFolder output("newest");
  write_checkpoint(output.path, 10, "ten");
  const fs::path twenty = write_checkpoint(output.path, 20, "twenty");
  const fs::path thirty = write_checkpoint(output.path, 30, "thirty");
  write_text(thirty / "subdomain_0.pt", "thirt");
  // An interrupted write: a folder without a manifest.
  fs::create_directories(tessera::io::checkpoint_directory(output.path.string(), 40));

  const auto found = tessera::io::newest_intact_checkpoint(output.path.string());
  CHECK(found.directory == twenty.string());
  REQUIRE(found.skipped.size() == 1);
  CHECK(found.skipped[0].directory == thirty.string());
  CHECK(found.skipped[0].reason == "subdomain_0.pt: 5 bytes, the manifest says 6");

  write_text(twenty / "subdomain_0.pt", "");
  write_text(output.path / "checkpoints" / "00000010" / "subdomain_0.pt", "");
  const auto none = tessera::io::newest_intact_checkpoint(output.path.string());
  CHECK(none.directory == "");
  CHECK(none.skipped.size() == 3);
}

TEST_CASE("pruning keeps the two newest intact checkpoints: a damaged one does not count") {
  TemporaryFolder output("prune");
  for (int64_t iteration : {10, 20, 30, 40})
    write_checkpoint(output.path, iteration, "state " + std::to_string(iteration));
  const fs::path thirty = tessera::io::checkpoint_directory(output.path.string(), 30);
  write_text(thirty / "subdomain_0.pt", "state");  // truncated

  tessera::io::prune_checkpoints(output.path.string(), 2, "r");
  const auto exists = [&](int64_t iteration) {
    return fs::exists(tessera::io::checkpoint_directory(output.path.string(), iteration));
  };
  CHECK_FALSE(exists(10));
  CHECK(exists(20));  // the second intact one
  CHECK(exists(30));  // damaged, but newer than a kept one: left alone
  CHECK(exists(40));

  write_checkpoint(output.path, 50, "state 50");
  tessera::io::prune_checkpoints(output.path.string(), 2, "r");
  CHECK_FALSE(exists(20));
  CHECK_FALSE(exists(30));
  CHECK(exists(40));
  CHECK(exists(50));
}
