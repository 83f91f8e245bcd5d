#include "tessera/app/console.hpp"

#include <iostream>

namespace tessera::app {
namespace {

/// A stream whose buffer is null: every write fails silently and costs nearly nothing.
std::ostream& discard() {
  static std::ostream null_stream(nullptr);
  return null_stream;
}

}  // namespace

Console::Console(bool root) : root_(root), out_(root ? &std::cout : &discard()) {}

void Console::warning(const std::string& text) const {
  std::cerr << "tessera: warning: " << text << std::endl;
}

}  // namespace tessera::app
