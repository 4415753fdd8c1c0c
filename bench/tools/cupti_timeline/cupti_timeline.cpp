// A GPU timeline without Nsight Systems: a CUDA injection library that records every kernel, memory copy and
// memset of a process through CUPTI's activity API and writes them, when the process exits, as one
// tab-separated line each (bench/nsys_overlap.py reads the file as it reads an nsys capture). For machines
// whose Nsight Systems cannot make a report, as the GPU machines we measure on (bench/gpu/step_timeline.sh).
//
//   CUDA_INJECTION64_PATH=libcupti_timeline.so CONVEYOR_TIMELINE_OUT=FILE program ...
//
// Under a launcher every rank writes its own FILE: "%r" in it stands for the rank (RANK, or Open MPI's
// OMPI_COMM_WORLD_RANK; the process id where neither is set).
//
// FILE's lines: `kernel START END DEVICE STREAM NAME` and `copy START END DEVICE STREAM BYTES KIND` (memset:
// kind "set"); times in nanoseconds of CUPTI's clock. The record types are the newest that the CUPTI headers
// define (build.sh finds them: CUPTI writes its records in the layout of its own version).
#include <cupti.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include <unistd.h>

#ifndef TIMELINE_KERNEL_RECORD
#error "build.sh defines TIMELINE_KERNEL_RECORD, TIMELINE_MEMCPY_RECORD and TIMELINE_MEMSET_RECORD"
#endif

namespace {

// CUPTI's buffer callbacks carry no user pointer, so the open file lives here, for the process's lifetime:
// an injection library's one piece of global state.
struct Timeline {
  std::mutex mutex;
  std::FILE* out = nullptr;
  std::size_t records = 0;
};
Timeline& timeline() {
  static Timeline instance;
  return instance;
}

constexpr std::size_t kBufferBytes = 8 << 20;
constexpr std::size_t kAlignment = 8;  // CUPTI's requirement for an activity buffer

void report(const char* what, CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::fprintf(stderr, "cupti_timeline: %s: %s\n", what, text ? text : "unknown error");
}

// `path` with each "%r" replaced by this process's rank under a launcher (its pid alone).
std::string with_rank(std::string path) {
  const char* rank = std::getenv("RANK");
  if (!rank) rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const std::string value = rank ? rank : "pid" + std::to_string(::getpid());
  for (std::size_t at; (at = path.find("%r")) != std::string::npos;) path.replace(at, 2, value);
  return path;
}

// A kernel's name as nsys shortens it: demangled, without its namespaces, template arguments or parameters.
std::string short_name(const char* mangled) {
  if (!mangled) return "?";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                        &std::free);
  std::string full = status == 0 && demangled ? demangled.get() : mangled;
  // "(anonymous namespace)" is a namespace, not a parameter list.
  for (std::size_t at; (at = full.find("(anonymous namespace)")) != std::string::npos;)
    full.replace(at, std::strlen("(anonymous namespace)"), "anonymous");
  std::string base;
  int depth = 0;
  for (const char c : full) {
    if (c == '<') ++depth;
    else if (c == '>') --depth;
    else if (c == '(' && depth == 0) break;
    else if (depth == 0) base += c;
  }
  for (const char* separator : {"::", " "}) {
    const std::size_t at = base.rfind(separator);
    if (at != std::string::npos) base = base.substr(at + std::strlen(separator));
  }
  return base.empty() ? full : base;
}

const char* copy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "htod";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "dtoh";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "dtod";
    default: return "other";
  }
}

template <class Record>  // a memcpy or memset record
void write_copy(std::FILE* out, const Record& m, const char* kind) {
  std::fprintf(out, "copy\t%llu\t%llu\t%u\t%u\t%llu\t%s\n", static_cast<unsigned long long>(m.start),
               static_cast<unsigned long long>(m.end), m.deviceId, m.streamId,
               static_cast<unsigned long long>(m.bytes), kind);
}

void write(std::FILE* out, const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const TIMELINE_KERNEL_RECORD*>(record);
      std::fprintf(out, "kernel\t%llu\t%llu\t%u\t%u\t%s\n", static_cast<unsigned long long>(k->start),
                   static_cast<unsigned long long>(k->end), k->deviceId, k->streamId,
                   short_name(k->name).c_str());
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = *reinterpret_cast<const TIMELINE_MEMCPY_RECORD*>(record);
      write_copy(out, m, copy_kind(m.copyKind));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET:
      write_copy(out, *reinterpret_cast<const TIMELINE_MEMSET_RECORD*>(record), "set");
      break;
    default: break;
  }
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  Timeline& t = timeline();
  {
    std::lock_guard lock(t.mutex);
    CUpti_Activity* record = nullptr;
    while (t.out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      write(t.out, record);
      ++t.records;
    }
  }
  std::free(buffer);
}

void flush_at_exit() {
  cuptiActivityFlushAll(1);  // hands every buffer to buffer_completed, complete or not
  Timeline& t = timeline();
  std::lock_guard lock(t.mutex);
  if (!t.out) return;
  std::fclose(t.out);
  t.out = nullptr;
  std::fprintf(stderr, "cupti_timeline: %zu records\n", t.records);
}

}  // namespace

// Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH), in the program's first CUDA
// call. The runtime registered its own teardown before that call reached the driver, and exit handlers run in
// the reverse order: this library's flush comes first.
extern "C" int InitializeInjection() {
  const char* const asked = std::getenv("CONVEYOR_TIMELINE_OUT");
  const std::string path = with_rank(asked ? asked : "cupti_timeline.tsv");
  Timeline& t = timeline();
  t.out = std::fopen(path.c_str(), "w");
  if (!t.out) {
    std::fprintf(stderr, "cupti_timeline: cannot write %s\n", path.c_str());
    return 0;
  }
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
    report("cuptiActivityRegisterCallbacks", r);
    return 0;
  }
  for (const CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) {
    if (const CUptiResult r = cuptiActivityEnable(kind); r != CUPTI_SUCCESS) report("cuptiActivityEnable", r);
  }
  std::atexit(flush_at_exit);
  return 1;
}
