#include "conveyor/ranks.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <vector>

#include "conveyor/error.h"

namespace conveyor {
namespace {

// The four numbers one launcher sets, under its own names.
struct LauncherNames {
  RankSource source;
  const char* rank;
  const char* world_size;
  const char* local_rank;
  const char* local_world_size;
};

constexpr LauncherNames kTorchrun{RankSource::torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK",
                                  "LOCAL_WORLD_SIZE"};
constexpr LauncherNames kOpenMpi{RankSource::open_mpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                 "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
// Slurm has no variable for this node's task count: read_slurm() makes it from the step's list.
constexpr LauncherNames kSlurm{RankSource::slurm, "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID",
                               "SLURM_STEP_TASKS_PER_NODE"};

std::string quoted(const std::string& name, const std::string& value) { return name + "='" + value + "'"; }

// A decimal integer in 0 .. INT_MAX, nothing else (no sign, no spaces, no trailing text).
int parse_count(const std::string& name, const std::string& value) {
  if (value.empty() || value.size() > 10)
    throw InvalidArgument(quoted(name, value) + " is not a non-negative decimal integer");
  long long parsed = 0;
  for (const char c : value) {
    if (c < '0' || c > '9')
      throw InvalidArgument(quoted(name, value) + " is not a non-negative decimal integer");
    parsed = parsed * 10 + (c - '0');
  }
  if (parsed > std::numeric_limits<int>::max()) throw InvalidArgument(quoted(name, value) + " is too large");
  return static_cast<int>(parsed);
}

std::optional<int> read_count(const Environment& environment, const char* name) {
  const std::optional<std::string> value = environment(name);
  if (!value) return std::nullopt;
  return parse_count(name, *value);
}

// Both of a pair, or neither.
void require_pair(const std::optional<int>& a, const char* a_name, const std::optional<int>& b,
                  const char* b_name) {
  if (a.has_value() == b.has_value()) return;
  const char* set = a ? a_name : b_name;
  const char* unset = a ? b_name : a_name;
  throw InvalidArgument(std::string(set) + " is set but " + unset +
                        " is not: a launcher sets both (set both, or neither for a single process)");
}

void require_rank_below(int rank, const char* rank_name, int size, const char* size_name) {
  if (size < 1) throw InvalidArgument(std::string(size_name) + "=" + std::to_string(size) + " is below 1");
  if (rank >= size)
    throw InvalidArgument(std::string(rank_name) + "=" + std::to_string(rank) + " is not below " + size_name +
                          "=" + std::to_string(size));
}

// Slurm's tasks per node, "2(x3),1" for 2, 2, 2, 1: comma-separated counts, each optionally repeated.
std::vector<int> expand_tasks_per_node(const std::string& name, const std::string& value) {
  const auto bad = [&] {
    return InvalidArgument(quoted(name, value) + " is not a list of task counts such as '2(x3),1'");
  };
  std::vector<int> counts;
  std::size_t at = 0;
  while (at <= value.size()) {
    const std::size_t comma = std::min(value.find(',', at), value.size());
    const std::string entry = value.substr(at, comma - at);
    const std::size_t open = entry.find("(x");
    int count = 0, repeat = 1;
    try {
      if (open == std::string::npos) {
        count = parse_count(name, entry);
      } else {
        if (entry.back() != ')') throw bad();
        count = parse_count(name, entry.substr(0, open));
        repeat = parse_count(name, entry.substr(open + 2, entry.size() - open - 3));
      }
    } catch (const InvalidArgument&) {
      throw bad();
    }
    if (count < 1 || repeat < 1 || counts.size() + static_cast<std::size_t>(repeat) > 1'000'000) throw bad();
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), count);
    at = comma + 1;
  }
  return counts;
}

// This node's entry of SLURM_STEP_TASKS_PER_NODE, at SLURM_NODEID; nullopt when the list is not set.
std::optional<int> slurm_tasks_on_this_node(const Environment& environment) {
  const std::optional<std::string> list = environment(kSlurm.local_world_size);
  if (!list) return std::nullopt;
  const std::vector<int> counts = expand_tasks_per_node(kSlurm.local_world_size, *list);
  const std::optional<int> node = read_count(environment, "SLURM_NODEID");
  if (!node) throw InvalidArgument(std::string(kSlurm.local_world_size) + " is set but SLURM_NODEID is not");
  if (static_cast<std::size_t>(*node) >= counts.size())
    throw InvalidArgument("SLURM_NODEID=" + std::to_string(*node) + " has no entry in " +
                          quoted(kSlurm.local_world_size, *list));
  return counts[static_cast<std::size_t>(*node)];
}

// One launcher's view, or nullopt when it set none of its variables.
std::optional<Ranks> read_launcher(const Environment& environment, const LauncherNames& names) {
  const std::optional<int> rank = read_count(environment, names.rank);
  const std::optional<int> world_size = read_count(environment, names.world_size);
  const std::optional<int> local_rank = read_count(environment, names.local_rank);
  const std::optional<int> local_world_size = names.source == RankSource::slurm
                                                  ? slurm_tasks_on_this_node(environment)
                                                  : read_count(environment, names.local_world_size);
  if (!rank && !world_size && !local_rank && !local_world_size) return std::nullopt;
  require_pair(rank, names.rank, world_size, names.world_size);
  require_pair(local_rank, names.local_rank, local_world_size, names.local_world_size);
  if (!rank)
    throw InvalidArgument(std::string(names.local_rank) + " is set but " + names.rank + " and " +
                          names.world_size + " are not");
  Ranks ranks;
  ranks.source = names.source;
  ranks.rank = *rank;
  ranks.world_size = *world_size;
  require_rank_below(ranks.rank, names.rank, ranks.world_size, names.world_size);
  // Without the local pair the job runs on one host: every process is local.
  ranks.local_rank = local_rank.value_or(ranks.rank);
  ranks.local_world_size = local_world_size.value_or(ranks.world_size);
  require_rank_below(ranks.local_rank, names.local_rank, ranks.local_world_size, names.local_world_size);
  if (ranks.local_world_size > ranks.world_size)
    throw InvalidArgument(std::string(names.local_world_size) + "=" + std::to_string(ranks.local_world_size) +
                          " is larger than " + names.world_size + "=" + std::to_string(ranks.world_size));
  return ranks;
}

void require_agreement(const Ranks& torch, const Ranks& mpi) {
  const auto check = [](int a, const char* a_name, int b, const char* b_name) {
    if (a != b)
      throw InvalidArgument("torchrun's and Open MPI's variables disagree: " + std::string(a_name) + "=" +
                            std::to_string(a) + " but " + b_name + "=" + std::to_string(b));
  };
  check(torch.rank, kTorchrun.rank, mpi.rank, kOpenMpi.rank);
  check(torch.world_size, kTorchrun.world_size, mpi.world_size, kOpenMpi.world_size);
  check(torch.local_rank, kTorchrun.local_rank, mpi.local_rank, kOpenMpi.local_rank);
  check(torch.local_world_size, kTorchrun.local_world_size, mpi.local_world_size, kOpenMpi.local_world_size);
}

}  // namespace

const char* to_string(RankSource source) noexcept {
  switch (source) {
    case RankSource::single_process:
      return "single_process";
    case RankSource::torchrun:
      return "torchrun";
    case RankSource::open_mpi:
      return "open_mpi";
    case RankSource::slurm:
      return "slurm";
  }
  return "unknown";
}

Environment process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Ranks ranks_from_environment(const Environment& environment) {
  if (!environment) throw InvalidArgument("ranks_from_environment: no environment function");
  const std::optional<Ranks> torch = read_launcher(environment, kTorchrun);
  const std::optional<Ranks> mpi = read_launcher(environment, kOpenMpi);
  if (torch && mpi) require_agreement(*torch, *mpi);
  Ranks ranks = torch ? *torch : mpi ? *mpi : Ranks{};
  // Slurm's describe this process only when nothing was started inside its step (see ranks.h); and only
  // srun's tasks have SLURM_STEP_NUM_TASKS, so a batch script (SLURM_PROCID=0 of SLURM_NTASKS) is one
  // process.
  if (!torch && !mpi && environment(kSlurm.world_size)) {
    if (const std::optional<Ranks> slurm = read_launcher(environment, kSlurm)) ranks = *slurm;
  }
  ranks.mpi_launcher =
      environment("OMPI_COMM_WORLD_SIZE").has_value() || environment("PMIX_RANK").has_value();
  if (const std::optional<std::string> addr = environment("MASTER_ADDR")) {
    if (addr->empty()) throw InvalidArgument("MASTER_ADDR is set but empty");
    ranks.master_addr = *addr;
  }
  if (const std::optional<std::string> port = environment("MASTER_PORT")) {
    const int value = parse_count("MASTER_PORT", *port);
    if (value < 1 || value > 65535)
      throw InvalidArgument(quoted("MASTER_PORT", *port) + " is not in 1..65535");
    ranks.master_port = value;
  }
  return ranks;
}

}  // namespace conveyor
