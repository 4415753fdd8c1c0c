// Runs one batch's nvJPEG host work on several threads at once. nvJPEG's host side (parsing, the batched
// hardware submission, the hybrid backend's Huffman decoding) costs about 170 µs per image on the GPU
// machine, all of it on the thread that calls it: one staging thread tops out near 6k deferred images/s.
// Each lane has its own decoders (nvJPEG handles, states, stream) and takes a contiguous part of the batch.
//
// Lane 0 runs on the calling thread, the others on threads of their own, kept for the decoder's life and
// asleep between batches. Not oneTBB's: the pipeline's arena keeps a worker on every core decoding on the
// CPU, so a second arena would get workers only when the pipeline leaves them, which is when the GPU's
// share of the work matters least.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace conveyor::cuda {

class DecodeLanes {
 public:
  explicit DecodeLanes(std::size_t count);  // count >= 1: lane 0 and count - 1 threads
  ~DecodeLanes();                           // wakes and joins the threads
  DecodeLanes(const DecodeLanes&) = delete;
  DecodeLanes& operator=(const DecodeLanes&) = delete;

  std::size_t size() const noexcept { return threads_.size() + 1; }

  // Calls work(lane) for every lane at once, lane 0 on this thread, and returns when all have returned;
  // then rethrows the exception of the lowest lane that threw, if any. One run at a time.
  void run(const std::function<void(std::size_t lane)>& work);

 private:
  void serve(std::size_t lane) noexcept;

  std::mutex mutex_;
  std::condition_variable start_, finished_;
  const std::function<void(std::size_t)>* work_ = nullptr;
  std::uint64_t generation_ = 0;  // one more per run: a thread runs each generation once
  std::size_t running_ = 0;       // threads still in this run's work
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;  // per lane, for the current run
  std::vector<std::thread> threads_;        // last: started once everything above exists
};

}  // namespace conveyor::cuda
