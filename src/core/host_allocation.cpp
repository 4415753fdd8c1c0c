#include "src/core/host_allocation.h"

#include <new>
#include <utility>

namespace conveyor {
namespace {

class PageableHostMemory final : public HostMemoryResource {
 public:
  void* allocate(std::size_t bytes) override {
    return ::operator new (bytes, std::align_val_t{detail::HostAllocation::kAlignment});
  }
  void deallocate(void* memory, std::size_t) noexcept override {
    ::operator delete (memory, std::align_val_t{detail::HostAllocation::kAlignment});
  }
  bool page_locked() const noexcept override { return false; }
};

}  // namespace

std::shared_ptr<HostMemoryResource> pageable_host_memory() {
  // Stateless: one shared instance would do, but a fresh one per call keeps the library free of globals.
  return std::make_shared<PageableHostMemory>();
}

namespace detail {

HostAllocation::HostAllocation(std::size_t bytes, std::shared_ptr<HostMemoryResource> resource)
    : resource_(std::move(resource)), size_(bytes) {
  if (bytes > 0) data_ = static_cast<std::byte*>(resource_->allocate(bytes));
}

HostAllocation::~HostAllocation() { reset(); }

HostAllocation::HostAllocation(HostAllocation&& other) noexcept
    : resource_(std::move(other.resource_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

HostAllocation& HostAllocation::operator=(HostAllocation&& other) noexcept {
  if (this != &other) {
    reset();
    resource_ = std::move(other.resource_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void HostAllocation::reset() noexcept {
  if (data_ != nullptr) resource_->deallocate(data_, size_);
  data_ = nullptr;
}

}  // namespace detail
}  // namespace conveyor
