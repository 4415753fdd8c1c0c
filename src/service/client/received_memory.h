// glibc's heap for a process that receives batches over gRPC at GB/s. gRPC reads each connection into
// blocks of up to 4 MB and frees them once a batch is decoded; glibc's default thresholds then give that
// memory back to the kernel (trim) and the next reads fault fresh pages in: a trainer receiving 50,000 images
// of 224 x 224 had 942,137 minor page faults and 4.6 s of system time in a 5.3 s run (issue 40,
// bench/results/2026-11-29-h200-service-transport). Fixed thresholds keep the memory for the next reads.
#pragma once

#include <string>

namespace conveyor::service::detail {

// Fixes glibc's mmap threshold at 32 MB (blocks below it come from the heap, however the dynamic threshold
// has moved) and its trim threshold at 1 GB (freed memory at a heap's top is kept up to that), once per
// process, unless the process's environment sets either (GLIBC_TUNABLES' glibc.malloc.mmap_threshold or
// glibc.malloc.trim_threshold, or MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_): the user's choice
// stands. Process-wide by nature (ServiceOptions::keep_received_memory turns it off). Returns a line saying
// what this process's heap does, for the run's report; does nothing on a C library other than glibc.
std::string keep_received_memory();

}  // namespace conveyor::service::detail
