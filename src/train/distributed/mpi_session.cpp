#include "src/train/distributed/mpi_session.h"

#include <cstdio>
#include <mutex>

#include "conveyor/error.h"
#include "conveyor/train/data_parallel.h"

namespace conveyor::train {

void check_mpi(int status, const char* call, const std::string& context) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(status, text, &length) != MPI_SUCCESS) length = 0;
  throw CollectiveError(std::string(call) + " failed in " + context + ": " +
                        (length > 0 ? std::string(text, static_cast<std::size_t>(length))
                                    : "MPI error " + std::to_string(status)));
}

namespace {

// The mutex that serialises the session's start: two trainers made at once on two threads would otherwise
// both see MPI uninitialised.
std::mutex& start_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

MpiSession& MpiSession::of_this_process(const Ranks& ranks) {
  static MpiSession session;  // see the header: MPI is the process's, and ends at its exit
  const std::lock_guard lock(start_mutex());
  if (!session.started_) session.start(ranks);
  try {
    session.check_world(ranks);
  } catch (...) {
    // This process cannot take part, and the others would wait for it: end the job at exit.
    session.abandoned_ = true;
    throw;
  }
  return session;
}

void MpiSession::start(const Ranks& ranks) {
  int finalized = 0, initialized = 0;
  CONVEYOR_MPI(MPI_Finalized(&finalized), "data parallel (is MPI up?)");
  if (finalized) throw InvalidArgument("data parallel: MPI was already finalised in this process");
  CONVEYOR_MPI(MPI_Initialized(&initialized), "data parallel (is MPI up?)");
  if (!initialized) {
    if (!ranks.mpi_launcher)
      throw InvalidArgument(
          "data parallel: MPI is asked for, but no MPI launcher started this process (neither "
          "OMPI_COMM_WORLD_SIZE nor PMIX_RANK is set): start it with mpirun -np N, srun --mpi=pmix, or "
          "scripts/launch.sh N where mpirun is installed");
    int provided = 0;
    CONVEYOR_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
                 "data parallel (MPI_Init)");
    owned_ = true;
    if (provided < MPI_THREAD_SERIALIZED)
      throw InvalidArgument("data parallel: this MPI library offers thread level " +
                            std::to_string(provided) +
                            ", below MPI_THREAD_SERIALIZED (calls from more than the main thread)");
  } else {
    int provided = 0;
    CONVEYOR_MPI(MPI_Query_thread(&provided), "data parallel (MPI's thread level)");
    if (provided < MPI_THREAD_SERIALIZED)
      throw InvalidArgument(
          "data parallel: the program initialised MPI below MPI_THREAD_SERIALIZED; call "
          "MPI_Init_thread with MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE");
  }
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(version, &length) == MPI_SUCCESS) {
    library_.assign(version, static_cast<std::size_t>(length));
    library_ = library_.substr(0, library_.find_first_of(",\n"));
  }
  started_ = true;
}

void MpiSession::check_world(const Ranks& ranks) const {
  int size = 0, rank = 0;
  CONVEYOR_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size), "data parallel (MPI's world)");
  CONVEYOR_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "data parallel (MPI's world)");
  if (size != ranks.world_size || rank != ranks.rank)
    throw InvalidArgument("data parallel: MPI's launcher started this process as rank " +
                          std::to_string(rank) + " of " + std::to_string(size) +
                          ", but the ranks given say rank " + std::to_string(ranks.rank) + " of " +
                          std::to_string(ranks.world_size) + " (from " + to_string(ranks.source) +
                          "'s variables): a wrong world size");
}

void MpiSession::abandoned() noexcept {
  const std::lock_guard lock(start_mutex());
  abandoned_ = true;
}

MpiSession::~MpiSession() {
  if (!started_ || !owned_) return;
  if (abandoned_) {
    std::fprintf(
        stderr,
        "conveyor: ending the MPI job with MPI_Abort: this rank left a collective half-done, and the "
        "other ranks would wait for it\n");
    // Does not return: ends this process and, through the launcher, the job.
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
}

}  // namespace conveyor::train
