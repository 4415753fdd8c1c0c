// The dispatcher's journal: every change to its state as one record appended to a file, and synced before the
// change is answered, so that a dispatcher killed at any moment restarts with every answer it gave. Records
// are framed as [length][XXH32 of the bytes][the JournalRecord's bytes]; a last record cut short by a crash
// (or damaged) ends the replay there and is cut off, the file keeping every whole record before it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>

#include "src/service/wire/conveyor_service_v1.pb.h"

namespace conveyor::service::detail {

class Journal {
 public:
  // Opens (or creates) `folder`/journal and hands every whole record to `apply`, in order. Throws IoError
  // when the folder or file cannot be made, read or written.
  Journal(const std::filesystem::path& folder, const std::function<void(const v1::JournalRecord&)>& apply);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends `record` and waits until the disk has it. Throws IoError.
  void append(const v1::JournalRecord& record);
  std::size_t replayed() const noexcept { return replayed_; }
  // Bytes of a damaged tail cut off at open (0: the file was whole).
  std::size_t cut_bytes() const noexcept { return cut_bytes_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::size_t replayed_ = 0, cut_bytes_ = 0;
};

}  // namespace conveyor::service::detail
