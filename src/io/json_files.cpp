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
  TESSERA_CHECK(std::rename(temporary.c_str(), path.c_str()) == 0,
                "cannot rename '" << temporary << "' to '" << path << "': " << std::strerror(errno));
}

HistoryWriter::HistoryWriter(const std::string& path) : path_(path), stream_(path, std::ios::trunc) {
  TESSERA_CHECK(stream_, "cannot write '" << path << "': " << std::strerror(errno));
}

void HistoryWriter::append(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  stream_.write(line.data(), static_cast<std::streamsize>(line.size()));
  stream_.flush();
  TESSERA_CHECK(stream_, "cannot append to '" << path_ << "': " << std::strerror(errno));
}

}  // namespace tessera::io
