#include <type_traits>
#include <utility>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "src/pipeline/pipeline.h"
#include "src/pipeline/sourced_batches.h"

namespace conveyor {

template <class Item>
Iterator<Item>::Iterator(std::unique_ptr<detail::Pipeline> pipeline) : pipeline_(std::move(pipeline)) {}

template <class Item>
Iterator<Item>::Iterator(std::unique_ptr<detail::SourcedBatches> sourced) : sourced_(std::move(sourced)) {}

template <class Item>
Iterator<Item>::Iterator(Iterator&&) noexcept = default;
template <class Item>
Iterator<Item>& Iterator<Item>::operator=(Iterator&&) noexcept = default;
template <class Item>
Iterator<Item>::~Iterator() = default;

template <class Item>
std::optional<Item> Iterator<Item>::next() {
  if (fetched_) {
    fetched_ = false;
    return std::exchange(current_, std::nullopt);
  }
  return pull();
}

template <class Item>
std::optional<Item> Iterator<Item>::pull() const {
  if constexpr (std::is_same_v<Item, Batch>) {
    if (sourced_) return sourced_->next_batch();
    return pipeline_ ? pipeline_->next_batch() : std::nullopt;
  } else {
    return pipeline_ ? pipeline_->next_sample() : std::nullopt;
  }
}

template <class Item>
void Iterator<Item>::fetch() const {
  if (fetched_) return;
  current_.reset();  // a batch goes back to the pool before the next one is asked for
  current_ = pull();
  fetched_ = true;
}

template <class Item>
bool Iterator<Item>::at_end() const {
  fetch();
  return !current_.has_value();
}

template <class Item>
const Item& Iterator<Item>::operator*() const {
  fetch();
  return *current_;
}

template <class Item>
Iterator<Item>& Iterator<Item>::operator++() {
  fetch();
  current_.reset();
  fetched_ = false;
  return *this;
}

template <class Item>
void Iterator<Item>::cancel() noexcept {
  if (pipeline_) pipeline_->cancel();
  if (sourced_) sourced_->cancel();
}

template <class Item>
PipelineStats Iterator<Item>::stats() const {
  if (sourced_) return sourced_->stats();
  return pipeline_ ? pipeline_->stats() : PipelineStats{};
}

template <class Item>
IteratorState Iterator<Item>::state() const {
  if (sourced_) return sourced_->state();
  if (!pipeline_) throw InvalidArgument("Iterator::state: a moved-from iterator has no state");
  return pipeline_->state();
}

template class Iterator<Batch>;
template class Iterator<Sample>;

}  // namespace conveyor
