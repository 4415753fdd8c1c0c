// ServiceOptions::keep_received_memory: glibc's thresholds fixed once per process, unless the environment set
// them. Each case runs in a process of its own (the setting is once per process and process-wide), started
// again from this program as the child test below.
#include "src/service/client/received_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/reliability/process_memory.h"
#include "tests/support/scoped_environment.h"
#include "tests/support/subprocess.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace conveyor::service::detail {
namespace {

constexpr std::size_t kBlock = 1 << 20;  // of the order of gRPC's read blocks (up to 4 MB)
constexpr int kBlocks = 24;

// Through a volatile pointer, so the compiler cannot elide an allocation the test only frees.
void* (*volatile allocate)(std::size_t) = std::malloc;
void (*volatile release)(void*) = std::free;

// The child: CONVEYOR_TEST_RECEIVED_MEMORY says what this process's heap must do after the call.
TEST(ReceivedMemoryChild, HeapBehavesAsTheNoteSays) {
  const char* expected = std::getenv("CONVEYOR_TEST_RECEIVED_MEMORY");
  if (expected == nullptr) GTEST_SKIP() << "run by the ReceivedMemory tests";
#ifndef __GLIBC__
  GTEST_SKIP() << "glibc's malloc only";
#else
  const std::string note = keep_received_memory();
  EXPECT_EQ(keep_received_memory(), note);  // once
  const struct mallinfo2 before = mallinfo2();
  std::vector<void*> blocks;
  for (int i = 0; i < kBlocks; ++i) {
    auto* block = static_cast<char*>(allocate(kBlock));
    for (std::size_t at = 0; at < kBlock; at += 4096) block[at] = 1;  // the pages in use, as a read's are
    blocks.push_back(block);
  }
  const struct mallinfo2 held = mallinfo2();
  for (void* block : blocks) release(block);
  const struct mallinfo2 freed = mallinfo2();
  const std::size_t mapped = held.hblkhd - before.hblkhd;  // blocks glibc gave their own mapping
  const std::size_t kept = freed.fordblks - std::min(freed.fordblks, before.fordblks);  // kept by the heap
  if (std::string(expected) == "kept") {
    EXPECT_NE(note.find("kept for the next reads"), std::string::npos) << note;
    EXPECT_EQ(mapped, 0u) << "1 MiB blocks must come from the heap";
    EXPECT_GE(kept, kBlocks * kBlock) << "freed blocks must stay with the heap, not go back to the kernel";
  } else {
    // The environment fixed a 64 KiB mmap threshold: every block has its own mapping, given back when
    // freed, and the note says whose choice that was.
    EXPECT_NE(note.find("as this process's environment sets them"), std::string::npos) << note;
    EXPECT_GE(mapped, kBlocks * kBlock);
    EXPECT_LT(kept, kBlock);
  }
#endif
}

testing::ProcessResult run_child(const std::vector<std::string>& environment) {
  return testing::run_process({"/proc/self/exe", "--gtest_filter=ReceivedMemoryChild.*"}, environment,
                              std::chrono::seconds(60));
}

TEST(ReceivedMemory, ReceivedBlocksStayWithTheHeap) {
  if (testing::kSanitized) GTEST_SKIP() << "a sanitizer's allocator replaces glibc's";
  const testing::ScopedEnvironment saved({{"GLIBC_TUNABLES", std::nullopt},
                                          {"MALLOC_MMAP_THRESHOLD_", std::nullopt},
                                          {"MALLOC_TRIM_THRESHOLD_", std::nullopt}});
  const testing::ProcessResult child = run_child({"CONVEYOR_TEST_RECEIVED_MEMORY=kept"});
  EXPECT_EQ(child.exit_code, 0) << child.out << child.err;
  EXPECT_NE(child.out.find("[  PASSED  ] 1 test"), std::string::npos) << child.out;
}

TEST(ReceivedMemory, TheUsersThresholdsStand) {
  if (testing::kSanitized) GTEST_SKIP() << "a sanitizer's allocator replaces glibc's";
  const testing::ScopedEnvironment saved(
      {{"MALLOC_MMAP_THRESHOLD_", std::nullopt}, {"MALLOC_TRIM_THRESHOLD_", std::nullopt}});
  const testing::ProcessResult child = run_child(
      {"CONVEYOR_TEST_RECEIVED_MEMORY=environment", "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=65536"});
  EXPECT_EQ(child.exit_code, 0) << child.out << child.err;
  EXPECT_NE(child.out.find("[  PASSED  ] 1 test"), std::string::npos) << child.out;
}

}  // namespace
}  // namespace conveyor::service::detail
