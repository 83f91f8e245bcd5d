#include "tessera/io/json_files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tessera/core/error.hpp"

namespace tessera::io {

void write_json_atomically(const std::string& path, const nlohmann::json& document) {
  const std::string temporary = path + ".part";
  {
    std::ofstream out(temporary, std::ios::trunc);
    TESSERA_CHECK(out, "cannot write '" << temporary << "': " << std::strerror(errno));
    out << document.dump(2) << "\n";
    out.flush();
    TESSERA_CHECK(out, "cannot write '" << temporary << "': " << std::strerror(errno));
  }
  TESSERA_CHECK(
      std::rename(temporary.c_str(), path.c_str()) == 0,
      "cannot rename '" << temporary << "' to '" << path << "': " << std::strerror(errno));
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
  TESSERA_CHECK(stream_, "cannot write '" << path << "': " << std::strerror(errno));
}

void HistoryWriter::append(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  stream_.write(line.data(), static_cast<std::streamsize>(line.size()));
  stream_.flush();
  TESSERA_CHECK(stream_, "cannot append to '" << path_ << "': " << std::strerror(errno));
}

}  // namespace tessera::io
