// This process's MPI (Open MPI): initialised once, on first use, and ended once, when the process exits.
//
// MPI allows one MPI_Init per process and no second one after MPI_Finalize, so the session cannot belong
// to one trainer: a program that makes a second DataParallelTrainer after the first must find MPI still
// up. It is therefore the one process-wide object of the training wing (a function-local static), kept in
// this file; everything else takes its ranks and options as arguments.
//
// MPI is initialised only in a process an MPI launcher started (Ranks::mpi_launcher): without one, Open
// MPI's MPI_Init would start a daemon of its own (a "singleton"), which the single-process and torchrun
// ways of running must not depend on. A program that initialised MPI itself keeps it: the session then
// neither initialises nor finalises it.
//
// A communicator that gave up on a collective (a rank gone or hung) calls abandoned(): the process then
// ends MPI with MPI_Abort, which makes the launcher end the other ranks too, instead of MPI_Finalize, which
// would wait for ranks that never come.
#pragma once

#include <mpi.h>

#include <string>

#include "conveyor/ranks.h"

namespace conveyor::train {

// Throws CollectiveError("<call> failed in <context>: <MPI's error string>") unless `status` is MPI_SUCCESS.
void check_mpi(int status, const char* call, const std::string& context);
#define CONVEYOR_MPI(call, context) ::conveyor::train::check_mpi((call), #call, (context))

class MpiSession {
 public:
  // The process's session, MPI initialised (MPI_THREAD_SERIALIZED: calls from any thread, one at a time).
  // Throws InvalidArgument when no MPI launcher started the process or MPI's world differs from `ranks`
  // (another size, or this process at another rank), naming both.
  static MpiSession& of_this_process(const Ranks& ranks);

  // A communicator left a collective half-done: end MPI with MPI_Abort at exit.
  void abandoned() noexcept;
  // "Open MPI v4.1.4" (MPI_Get_library_version's first line).
  const std::string& library() const noexcept { return library_; }

  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  MpiSession() = default;
  void start(const Ranks& ranks);
  void check_world(const Ranks& ranks) const;

  bool started_ = false;
  bool owned_ = false;  // this session called MPI_Init, so it ends MPI
  bool abandoned_ = false;
  std::string library_;
};

}  // namespace conveyor::train
