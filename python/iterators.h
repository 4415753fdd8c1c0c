// What Python iterates: the owning C++ iterators wrapped so that every wait releases the GIL, the batch
// handed out last is given back when the iterator moves on (a batch is valid until the next one; its
// Tensors, when kept, keep their memory), and closing or dropping the iterator stops the pipeline at once
// (an early `break` joins the pipeline's threads, with the GIL released while they finish).
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "python/bindings.h"

namespace conveyor::python {

// One item handed to Python until its iterator moves on. The Python object (Batch, DeviceBatch) holds the
// lease; the iterator empties it on the next step; Tensors made meanwhile hold `item` themselves.
template <class Item>
struct Lease {
  std::shared_ptr<Item> item;

  Item& get() const {
    if (!item)
      throw Error(
          "this batch was released: a batch is valid until its iterator moves on (or release() is called). "
          "Keep batch.images / batch.labels (or the tensors made from them, e.g. torch.from_dlpack(...)) to "
          "hold its memory longer");
    return *item;
  }
};

// The object behind a conveyor.Batch (host memory).
struct PyBatch {
  std::shared_ptr<Lease<Batch>> lease;
};

// An owning C++ iterator (BatchIterator, SampleIterator, DeviceBatchIterator) with what Python needs
// around it. `Keep` is whatever the iterator needs alive while it runs (the DeviceFeeder it stages through).
template <class CppIterator, class Keep = std::nullptr_t>
class PythonIterator {
 public:
  PythonIterator(CppIterator iterator, Keep keep = {})
      : keep_(std::move(keep)), iterator_(std::move(iterator)) {}
  PythonIterator(PythonIterator&& other) noexcept
      : keep_(std::move(other.keep_)),
        iterator_(std::exchange(other.iterator_, std::nullopt)),
        stats_(other.stats_) {}
  PythonIterator& operator=(PythonIterator&&) = delete;
  ~PythonIterator() { stop(); }

  // The next item, or std::nullopt at the end (after close() too). Waits with the GIL released, so
  // another Python thread could call in meanwhile: that is refused (the C++ iterator is not for
  // concurrent use).
  auto next() -> decltype(std::declval<CppIterator&>().next()) {
    if (!iterator_) return std::nullopt;
    const Busy busy(busy_);
    py::gil_scoped_release released;
    return iterator_->next();
  }
  // Stops the pipeline now; stats() keeps the last figures.
  void close() {
    if (!iterator_) return;
    if (busy_) throw Error("conveyor: an iterator cannot be closed while another thread waits in its next()");
    stats_ = iterator_->stats();
    stop();
  }
  PipelineStats stats() const { return iterator_ ? iterator_->stats() : stats_; }
  const Keep& kept() const noexcept { return keep_; }

 private:
  // The iterator's destructor cancels the work and joins the pipeline's threads, which may be waiting for
  // the GIL in a Python map: it must run with the GIL released.
  void stop() noexcept {
    if (!iterator_) return;
    if (PyGILState_Check()) {
      py::gil_scoped_release released;
      iterator_.reset();
    } else {
      iterator_.reset();
    }
  }

  // Marks the iterator in use for the length of a next() call; set and cleared with the GIL held.
  class Busy {
   public:
    explicit Busy(bool& flag) : flag_(flag) {
      if (flag_) throw Error("conveyor: an iterator is used from two threads at once");
      flag_ = true;
    }
    ~Busy() { flag_ = false; }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    bool& flag_;
  };

  Keep keep_;  // before the iterator: destroyed after it
  std::optional<CppIterator> iterator_;
  PipelineStats stats_;
  bool busy_ = false;
};

// A Python iteration over leased items (Batch, DeviceBatch): next() first releases the item handed out
// before, so a batch is valid until the iterator moves on (its Tensors, when kept, hold the item and so its
// memory or ring slot); close() releases it too. `PyItem` is the Python object over a lease (PyBatch, ...);
// `Keep` as for PythonIterator.
template <class CppIterator, class PyItem, class Keep = std::nullptr_t>
class LeasingIteration {
 public:
  using Item = typename decltype(std::declval<CppIterator&>().next())::value_type;

  explicit LeasingIteration(CppIterator iterator, Keep keep = {})
      : iterator_(std::move(iterator), std::move(keep)) {}

  py::object next() {
    release_last();
    std::optional<Item> item = iterator_.next();
    if (!item) throw py::stop_iteration();
    last_ = std::make_shared<Lease<Item>>();
    last_->item = std::make_shared<Item>(std::move(*item));
    return py::cast(PyItem{last_});
  }
  void close() {
    release_last();
    iterator_.close();
  }
  PipelineStats stats() const { return iterator_.stats(); }
  const Keep& kept() const noexcept { return iterator_.kept(); }

 private:
  void release_last() {
    if (last_) last_->item.reset();  // its Tensors, if kept, still hold it
    last_.reset();
  }
  PythonIterator<CppIterator, Keep> iterator_;
  std::shared_ptr<Lease<Item>> last_;
};

// The Python class of an iteration (LeasingIteration, or one with the same next, close and stats): an
// iterator and a context manager whose exit closes it. Returned for more methods.
template <class Iteration>
py::class_<Iteration> bind_iteration(py::module_& module, const char* name, const char* doc) {
  return py::class_<Iteration>(module, name, doc)
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &Iteration::next)
      .def("close", &Iteration::close,
           "Stops the pipeline now (cancels the work, joins its threads); later calls of next() end the "
           "iteration. Dropping the iterator (an early break) does the same.")
      .def("stats", &Iteration::stats, "The pipeline's counts so far (PipelineStats).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Iteration& self, const py::args&) { self.close(); });
}

// Python iterators over a dataset's samples and over a batched dataset's host batches.
py::object iterate_samples(const Dataset& dataset);
py::object iterate_batches(const BatchedDataset& dataset);

}  // namespace conveyor::python
