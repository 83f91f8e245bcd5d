#include "tessera/parallel/device_map.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "tessera/core/error.hpp"

namespace tessera::parallel {

int node_local_rank(const Communicator& comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm.native(), MPI_COMM_TYPE_SHARED, comm.rank(), MPI_INFO_NULL, &node);
  int rank = 0;
  MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  return rank;
}

int cuda_device_for(int local_rank, int visible, int pinned) {
  TESSERA_CHECK(visible > 0, "no CUDA device is visible to this rank");
  if (pinned >= 0) {
    TESSERA_CHECK(pinned < visible, "device: \"cuda:" << pinned << "\" but this rank sees "
                                                      << visible
                                                      << " CUDA device(s) (CUDA_VISIBLE_DEVICES "
                                                         "narrows them); use an index below "
                                                      << visible << " or \"cuda\"");
    return pinned;
  }
  return local_rank % visible;
}

}  // namespace tessera::parallel

namespace tessera::parallel {

namespace {

// "0-2, 5" for ranks {0, 1, 2, 5}.
std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += std::to_string(ranks[i]);
    if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

std::string rank_word(std::size_t count) { return count == 1 ? "rank " : "ranks "; }

}  // namespace

RankDevice this_rank_device(int cuda_index) {
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(host, &length);
  return {std::string(host, static_cast<std::size_t>(length)),
          cuda_index >= 0 ? gpu_name(cuda_index) : std::string()};
}

std::vector<RankDevice> gather_devices(const Communicator& comm, const RankDevice& own) {
  // One line per rank, "host\tgpu": neither holds a tab or a newline.
  const std::string all = comm.all_gather(own.host + "\t" + own.gpu + "\n");
  std::vector<RankDevice> ranks;
  std::size_t start = 0;
  for (std::size_t end = all.find('\n'); end != std::string::npos;
       start = end + 1, end = all.find('\n', start)) {
    const std::string line = all.substr(start, end - start);
    const std::size_t tab = line.find('\t');
    ranks.push_back({line.substr(0, tab), tab == std::string::npos ? "" : line.substr(tab + 1)});
  }
  return ranks;
}

std::string device_kind_disagreement(const std::vector<RankDevice>& ranks) {
  std::vector<int> on_gpu, on_cpu;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    (ranks[r].gpu.empty() ? on_cpu : on_gpu).push_back(static_cast<int>(r));
  if (on_gpu.empty() || on_cpu.empty()) return "";
  std::ostringstream text;
  text << rank_word(on_gpu.size()) << rank_list(on_gpu) << " train on a GPU and "
       << rank_word(on_cpu.size()) << rank_list(on_cpu) << " on the CPU (host "
       << ranks[static_cast<std::size_t>(on_cpu.front())].host
       << " sees no GPU with \"device\": \"auto\"); one job trains on one kind of device: "
          "give every rank a GPU (the launcher's GPU binding, CUDA_VISIBLE_DEVICES), or set "
          "\"device\": \"cpu\"";
  return text.str();
}

int ranks_on_same_gpu(const std::vector<RankDevice>& ranks, int rank) {
  const auto& own = ranks.at(static_cast<std::size_t>(rank));
  if (own.gpu.empty()) return 1;
  int count = 0;
  for (const auto& other : ranks) count += other.host == own.host && other.gpu == own.gpu;
  return count;
}

std::string shared_gpu_warning(const std::vector<RankDevice>& ranks) {
  std::map<std::pair<std::string, std::string>, int> per_gpu;
  for (const auto& r : ranks)
    if (!r.gpu.empty()) ++per_gpu[{r.host, r.gpu}];
  int shared = 0, most = 0, sharing = 0;
  for (const auto& [gpu, count] : per_gpu)
    if (count > 1) ++shared, sharing += count, most = std::max(most, count);
  if (shared == 0) return "";
  std::ostringstream text;
  text << sharing << " ranks share " << shared << (shared == 1 ? " GPU" : " GPUs") << " (up to "
       << most << " on one): ranks on one GPU take turns on it, so they run about that many "
       << "times slower each, and each gets its share of its memory; start one rank per GPU, "
          "or run NVIDIA MPS to let them overlap (docs/install.md, \"Several ranks on one GPU\")";
  return text.str();
}

}  // namespace tessera::parallel
