// Shared memory between a worker and a trainer of one host: the worker's region and the blocks its pipelines
// take from it, and the trainer's mapping, which opens only what the worker offered and reads only inside it.
#include "src/service/common/shared_region.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.h"

namespace conveyor::service::detail {
namespace {

constexpr std::size_t kPage = 4096;

TEST(SharedRegion, ATrainerMapsWhatTheWorkerWritesAndOnlyThat) {
  const SharedRegion region(64 * kPage);
  EXPECT_TRUE(region.path().starts_with("/proc/")) << region.path();
  std::memset(region.data() + SharedRegion::kHeaderBytes, 0x5a, kPage);
  const MappedRegion mapped(region.path(), region.nonce(), region.bytes());
  const std::span<const std::byte> seen = mapped.range(SharedRegion::kHeaderBytes, kPage);
  for (const std::byte b : seen) ASSERT_EQ(b, std::byte{0x5a});
  // Written after the mapping: the same pages, not a copy.
  region.data()[SharedRegion::kHeaderBytes + 1] = std::byte{7};
  EXPECT_EQ(seen[1], std::byte{7});
  EXPECT_THROW((void)mapped.range(0, 8), InvalidArgument) << "the nonce's page is not a batch's";
  EXPECT_THROW((void)mapped.range(region.bytes() - kPage, 2 * kPage), InvalidArgument);
  EXPECT_THROW((void)mapped.range(~std::uint64_t{0} - 2, 4), InvalidArgument);
  EXPECT_NO_THROW((void)mapped.range(region.bytes() - kPage, kPage));
}

TEST(SharedRegion, AnotherNonceSizeOrPathIsRefused) {
  const SharedRegion region(16 * kPage);
  EXPECT_THROW(MappedRegion(region.path(), region.nonce() + 1, region.bytes()), IoError);
  EXPECT_THROW(MappedRegion(region.path(), region.nonce(), region.bytes() + kPage), IoError);
  // Only a /proc/PID/fd/N: a worker cannot have a trainer open any other file.
  for (const std::string path : {"/etc/passwd", "/proc/self/fd/0", "/proc/1/fd/../environ", "/proc//fd/3"})
    EXPECT_THROW(MappedRegion(path, region.nonce(), region.bytes()), IoError) << path;
  // A process that is not there (PID numbers stop well below this).
  EXPECT_THROW(MappedRegion("/proc/999999999/fd/3", region.nonce(), region.bytes()), IoError);
}

TEST(SharedRegion, AnUnsealedMemoryFileIsRefused) {
  // It could shrink under the trainer's reads.
  const int fd = ::memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 16 * kPage), 0);
  const std::string path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd);
  EXPECT_THROW(MappedRegion(path, 0, 16 * kPage), IoError);
  ::close(fd);
}

TEST(SharedRegionMemory, BlocksComeFirstFitAndMergeWhenFreed) {
  auto region = std::make_shared<SharedRegion>(SharedRegion::kHeaderBytes + 8 * kPage);
  SharedRegionMemory memory(region, nullptr);
  void* a = memory.allocate(3 * kPage);
  void* b = memory.allocate(3 * kPage - 100);  // rounded up to whole pages
  EXPECT_EQ(memory.offset_of(a, 3 * kPage), SharedRegion::kHeaderBytes);
  EXPECT_EQ(memory.offset_of(b, 3 * kPage), SharedRegion::kHeaderBytes + 3 * kPage);
  EXPECT_EQ(memory.used_bytes(), 6 * kPage);
  // Two pages left: a block of four comes from ordinary memory, outside the region.
  void* c = memory.allocate(4 * kPage);
  EXPECT_FALSE(memory.offset_of(c, 1));
  memory.deallocate(c, 4 * kPage);
  memory.deallocate(a, 3 * kPage);
  memory.deallocate(b, 3 * kPage - 100);
  EXPECT_EQ(memory.used_bytes(), 0u);
  // Freed neighbours merged: the whole region is one block again.
  void* whole = memory.allocate(8 * kPage);
  EXPECT_EQ(memory.offset_of(whole, 8 * kPage), SharedRegion::kHeaderBytes);
  memory.deallocate(whole, 8 * kPage);
}

TEST(SharedRegionMemory, OnlyRangesWhollyInsideTheRegionHaveAnOffset) {
  auto region = std::make_shared<SharedRegion>(SharedRegion::kHeaderBytes + 4 * kPage);
  const SharedRegionMemory memory(region, nullptr);
  const std::byte* base = region->data();
  EXPECT_FALSE(memory.offset_of(base, 8)) << "the header";
  EXPECT_EQ(memory.offset_of(base + SharedRegion::kHeaderBytes, 4 * kPage), SharedRegion::kHeaderBytes);
  EXPECT_FALSE(memory.offset_of(base + SharedRegion::kHeaderBytes, 4 * kPage + 1));
  std::vector<std::byte> elsewhere(64);
  EXPECT_FALSE(memory.offset_of(elsewhere.data(), elsewhere.size()));
}

}  // namespace
}  // namespace conveyor::service::detail
