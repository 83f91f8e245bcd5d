// A C++ program that uses a model exported by `tessera export` with LibTorch alone, as a user's
// code would: load_exported_model MODEL.pt POINTS.csv prints the fields at the points.
//   POINTS.csv: one point per line, its inputs comma-separated (no header).
//   Output: one line per point, the fields comma-separated, 17 significant digits.
#include <torch/script.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: load_exported_model MODEL.pt POINTS.csv\n");
    return 2;
  }
  torch::jit::Module model = torch::jit::load(argv[1]);
  std::ifstream in(argv[2]);
  std::vector<double> values;
  int64_t rows = 0;
  for (std::string line; std::getline(in, line); ++rows) {
    std::stringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) values.push_back(std::stod(cell));
  }
  if (rows == 0) return 1;
  const auto points = torch::tensor(values, torch::kFloat64).view({rows, -1});
  const auto fields = model.forward({points}).toTensor().contiguous();
  const double* data = fields.data_ptr<double>();
  for (int64_t i = 0; i < fields.size(0); ++i)
    for (int64_t k = 0; k < fields.size(1); ++k)
      std::printf("%.17g%c", data[i * fields.size(1) + k], k + 1 < fields.size(1) ? ',' : '\n');
  return 0;
}
