#include "src/service/common/batch_codec.h"

#include <cstring>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "conveyor/error.h"
#include "src/service/common/shared_region.h"

namespace conveyor::service::detail {
namespace {

struct NamedTensor {
  std::string_view name;
  TensorView view;
};

// Every tensor of the batch, named: the pixels, the labels, then its field tensors as the batch lists them,
// whatever their kinds (masks, boxes, keypoints, a kind of a user's own).
std::vector<NamedTensor> tensors_of(const Batch& batch) {
  std::vector<NamedTensor> out{{"pixels", batch.pixel_tensor()}, {"labels", batch.label_tensor()}};
  for (const BatchTensor& tensor : batch.fields()) out.push_back({tensor.name, tensor.view});
  return out;
}

// The position of the field tensor `name` in the job's layout, or nullopt.
std::optional<std::size_t> field_index(std::string_view name, const BatchSourceLayout& layout) {
  for (std::size_t i = 0; i < layout.field_tensors.size(); ++i)
    if (layout.field_tensors[i].name == name) return i;
  return std::nullopt;
}

[[noreturn]] void malformed(const std::string& why) {
  throw InvalidArgument("malformed batch frame: " + why);
}

std::string head_of(const v1::ServerFrame& frame) {
  const std::size_t size = frame.ByteSizeLong();
  std::string head(4 + size, '\0');
  const auto length = static_cast<std::uint32_t>(size);
  std::memcpy(head.data(), &length, 4);
  if (!frame.SerializeToArray(head.data() + 4, static_cast<int>(size)))
    throw Error("batch frame: cannot serialize");
  return head;
}

}  // namespace

std::size_t Frame::bytes() const noexcept {
  std::size_t total = head.size();
  for (const auto& range : payload) total += range.size();
  return total;
}

Frame encode_batch(const Batch& batch, std::uint64_t split, std::uint64_t batch_in_split,
                   const SharedPlacement* shared) {
  v1::ServerFrame frame;
  v1::BatchHeader& header = *frame.mutable_batch();
  header.set_split(split);
  header.set_batch_in_split(batch_in_split);
  header.set_epoch(batch.epoch());
  header.set_size(batch.size());
  for (const SampleInfo& sample : batch.samples()) {
    header.add_index(sample.index);
    header.add_sample_epoch(sample.epoch);
    header.add_seed(sample.seed);
    header.add_padding(sample.padding);
  }
  Frame out;
  for (const NamedTensor& tensor : tensors_of(batch)) {
    v1::TensorHeader& t = *header.add_tensors();
    t.set_name(std::string(tensor.name));
    t.set_dtype(to_string(tensor.view.dtype));
    for (int d = 0; d < tensor.view.ndim; ++d) t.add_shape(tensor.view.shape[static_cast<std::size_t>(d)]);
    t.set_bytes(tensor.view.bytes());
    out.payload.emplace_back(static_cast<const std::byte*>(tensor.view.data), tensor.view.bytes());
  }
  if (shared != nullptr) {
    std::vector<std::uint64_t> offsets;
    for (const std::span<const std::byte>& range : out.payload) {
      const std::optional<std::uint64_t> offset = shared->memory.offset_of(range.data(), range.size());
      if (!offset) break;
      offsets.push_back(*offset);
    }
    if (offsets.size() == out.payload.size()) {
      v1::LentTensors& lent = *header.mutable_lent();
      lent.set_id(shared->lent_id);
      for (const std::uint64_t offset : offsets) lent.add_offset(offset);
      for (const std::span<const std::byte>& range : out.payload) out.lent_bytes += range.size();
      out.payload.clear();
      out.lent = true;
    }
  }
  out.head = head_of(frame);
  out.keep_alive = batch.share_memory();
  return out;
}

std::vector<std::span<const std::byte>> lent_tensors(const v1::BatchHeader& header,
                                                     const MappedRegion& region) {
  if (header.lent().offset_size() != header.tensors_size())
    malformed(std::to_string(header.lent().offset_size()) + " shared-memory offsets for " +
              std::to_string(header.tensors_size()) + " tensors");
  std::vector<std::span<const std::byte>> slices;
  for (int i = 0; i < header.tensors_size(); ++i) {
    try {
      slices.push_back(region.range(header.lent().offset(i), header.tensors(i).bytes()));
    } catch (const InvalidArgument& error) {
      malformed("tensor " + header.tensors(i).name() + ": " + error.what());
    }
  }
  return slices;
}

Frame encode_frame(const v1::ServerFrame& frame) {
  Frame out;
  out.head = head_of(frame);
  return out;
}

FrameReader::FrameReader(std::vector<std::span<const std::byte>> slices) : slices_(std::move(slices)) {
  for (const auto& slice : slices_) remaining_ += slice.size();
}

void FrameReader::copy_to(void* out, std::size_t bytes) {
  if (bytes > remaining_)
    malformed("it ends " + std::to_string(bytes - remaining_) +
              " bytes before the data its header announces");
  auto* to = static_cast<std::byte*>(out);
  while (bytes > 0) {
    const std::span<const std::byte>& slice = slices_[slice_];
    const std::size_t n = std::min(bytes, slice.size() - offset_);
    std::memcpy(to, slice.data() + offset_, n);
    to += n;
    bytes -= n;
    remaining_ -= n;
    offset_ += n;
    if (offset_ == slice.size()) {
      ++slice_;
      offset_ = 0;
    }
  }
}

v1::ServerFrame FrameReader::head() {
  std::uint32_t length = 0;
  if (remaining_ < 4) malformed("shorter than its length prefix");
  copy_to(&length, 4);
  if (length > remaining_)
    malformed("a header of " + std::to_string(length) + " bytes in a frame of " +
              std::to_string(remaining_ + 4));
  std::string bytes(length, '\0');
  copy_to(bytes.data(), length);
  v1::ServerFrame frame;
  if (!frame.ParseFromString(bytes)) malformed("its header does not parse");
  return frame;
}

Batch decode_batch(const v1::BatchHeader& header, FrameReader& payload, BatchWriter writer,
                   const BatchSourceLayout& layout, std::uint64_t sequence) {
  const std::size_t size = header.size();
  if (size == 0 || size > writer.capacity())
    malformed(std::to_string(size) + " samples for batches of " + std::to_string(writer.capacity()));
  if (static_cast<std::size_t>(header.index_size()) != size ||
      static_cast<std::size_t>(header.sample_epoch_size()) != size ||
      static_cast<std::size_t>(header.seed_size()) != size ||
      static_cast<std::size_t>(header.padding_size()) != size)
    malformed("sample identities for another number of samples than " + std::to_string(size));
  const std::span<SampleInfo> samples = writer.samples();
  for (std::size_t i = 0; i < size; ++i)
    samples[i] = SampleInfo{.index = header.index(static_cast<int>(i)),
                            .epoch = header.sample_epoch(static_cast<int>(i)),
                            .seed = header.seed(static_cast<int>(i)),
                            .padding = header.padding(static_cast<int>(i))};
  std::set<std::string> seen;
  for (const v1::TensorHeader& t : header.tensors()) {
    if (t.shape_size() < 1 || t.shape_size() > TensorView::kMaxDims ||
        t.shape(0) != static_cast<std::int64_t>(size))
      malformed("tensor " + t.name() + " is not shaped (" + std::to_string(size) + ", ...)");
    if (!seen.insert(t.name()).second) malformed("tensor " + t.name() + " twice");
    std::vector<std::int64_t> dims(t.shape().begin() + 1, t.shape().end());
    for (const std::int64_t extent : dims)
      if (extent < 0 || extent > (1 << 20)) malformed("tensor " + t.name() + " has a bad shape");
    TensorView target;
    if (t.name() == "pixels") {
      target = writer.pixel_tensor();
    } else if (t.name() == "labels") {
      target = writer.label_tensor();
    } else if (const std::optional<std::size_t> i = field_index(t.name(), layout)) {
      if (t.dtype() != to_string(layout.field_tensors[*i].dtype))
        malformed("tensor " + t.name() + " as " + t.dtype() + ", the job's is " +
                  to_string(layout.field_tensors[*i].dtype));
      try {
        target = writer.field_tensor(*i, dims);  // checks the rank and the fixed extents
      } catch (const InvalidArgument& e) {
        malformed(e.what());
      }
    } else {
      malformed("tensor " + t.name() + ", which batches of this job do not have");
    }
    if (t.dtype() != to_string(target.dtype) || target.ndim != t.shape_size())
      malformed("tensor " + t.name() + " as " + t.dtype() + " of " + std::to_string(t.shape_size()) +
                " dimensions, the job's has " + to_string(target.dtype) + " of " +
                std::to_string(target.ndim));
    std::size_t bytes = dtype_size(target.dtype) * size;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] != target.shape[d + 1])
        malformed("tensor " + t.name() + ": dimension " + std::to_string(d + 1) + " is " +
                  std::to_string(dims[d]) + ", the job's " + std::to_string(target.shape[d + 1]));
      bytes *= static_cast<std::size_t>(dims[d]);
    }
    if (t.bytes() != bytes)
      malformed("tensor " + t.name() + " announces " + std::to_string(t.bytes()) + " bytes for its shape's " +
                std::to_string(bytes));
    payload.copy_to(target.data, bytes);
  }
  // Every tensor of the job's layout, none left as the buffer's last batch had it.
  std::set<std::string> expected{"pixels", "labels"};
  for (const FieldTensorLayout& tensor : layout.field_tensors) expected.insert(tensor.name);
  if (seen != expected) malformed("not the tensors of this job's batches");
  if (payload.remaining() != 0)
    malformed(std::to_string(payload.remaining()) + " bytes after its last tensor");
  try {
    return std::move(writer).finish(size, sequence, header.epoch());  // checks the counts of what pads
  } catch (const InvalidArgument& e) {
    malformed(e.what());
  }
}

}  // namespace conveyor::service::detail
