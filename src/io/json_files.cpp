#include "tessera/io/json_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "output_space.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/write_error.hpp"

namespace tessera::io {

namespace {

[[noreturn]] void fail_to_write(const std::string& what, const std::string& path) {
  throw WriteError(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

void write_json_atomically(const std::string& path, const nlohmann::json& document) {
  const std::string temporary = path + ".part";
  {
    // Truncating the temporary file frees what reserve_json_room set aside, for this write.
    std::ofstream out(temporary, std::ios::trunc);
    if (!out) fail_to_write("cannot write", temporary);
    out << document.dump(2) << "\n";
    out.flush();
    if (!out) fail_to_write("cannot write", temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    fail_to_write("cannot rename '" + temporary + "' to", path);
}

bool reserve_json_room(const std::string& path, uint64_t bytes) {
  const std::string temporary = path + ".part";
  const int descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (descriptor < 0) return false;
  // Blocks claimed beyond the end of an empty file: it stays empty until the write.
  const bool claimed = detail::claim_blocks(descriptor, bytes) == 0;
  ::close(descriptor);
  return claimed;
}

namespace {

/// The lines of history.jsonl up to `iteration` (without a final line), rewritten in place.
void keep_history_until(const std::string& path, int64_t iteration) {
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded()) break;  // a line cut by a kill: everything after it is newer
    if (record.value("iteration", int64_t{0}) > iteration || record.value("final", false)) continue;
    kept += line + "\n";
  }
  std::ofstream out(path + ".tmp", std::ios::trunc);
  out << kept;
  out.close();
  TESSERA_CHECK(out && std::rename((path + ".tmp").c_str(), path.c_str()) == 0,
                "cannot rewrite '" << path << "': " << std::strerror(errno));
}

}  // namespace

HistoryWriter::HistoryWriter(const std::string& path, int64_t continue_after) : path_(path) {
  if (continue_after >= 0) keep_history_until(path, continue_after);
  stream_.open(path, continue_after >= 0 ? std::ios::app : std::ios::trunc);
  if (!stream_) fail_to_write("cannot write", path);
}

void HistoryWriter::append(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  stream_.write(line.data(), static_cast<std::streamsize>(line.size()));
  stream_.flush();
  if (!stream_) fail_to_write("cannot append to", path_);
}

}  // namespace tessera::io
