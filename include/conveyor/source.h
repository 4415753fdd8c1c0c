// Where a dataset's elements come from, beyond the built-in file lists and shards: the open interface a
// user's own source implements (SampleSource, given to Dataset::from_source), and the options of the
// built-in sources of annotated images (Dataset::segmentation_folder, Dataset::coco_detection), which are
// written on that same interface.
//
// A SampleSource is random access: element i of n, read in any order by the pipeline's threads. So the
// ordering methods (whole-epoch shuffle, shard, skip, take), iterator state and resume, and the split
// across ranks work on it exactly as they do on a folder of files; a failing read fails or is skipped
// (PipelineOptions::on_error) like a bad file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/fields.h"
#include "conveyor/sample.h"
#include "conveyor/stats.h"

namespace conveyor {

// What the pipeline asks of every read (PipelineOptions).
struct ReadLimits {
  // Refuse files larger than this (IoError) before reading them, as conveyor::read_file does; 0: no limit.
  std::size_t max_file_bytes = 0;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;

  // Elements: fixed for the source's life.
  virtual std::size_t size() const = 0;
  // Element i, i < size(), into `sample`: its image (sample.encoded: JPEG or PNG bytes, which the decoding
  // ops decode; or pixels written through sample.output() and publish()), and where the source has them
  // sample.label, encoded_mask (a PNG of class ids of the image's size), boxes (in the stored image's
  // pixels), tags and path (what errors and skips name; set it first). The sample arrives with its
  // identity (index, epoch, seed) set and its fields empty, their capacities kept: assigning into them does
  // not allocate once warm. Called concurrently from the pipeline's threads: must be thread-safe. Throw
  // (IoError, DecodeError, InvalidArgument, ...) for an element that cannot be read.
  virtual void read(std::size_t i, Sample& sample, const ReadLimits& limits) const = 0;

  // The fields its elements carry besides the image and label, so that batches have room for them.
  virtual FieldSet fields() const { return {}; }
  // One line that identifies the source in an iterator's state: a state saved over another source (or
  // another listing of it) is refused on resume. Name the kind, the place and the size.
  virtual std::string describe() const;
  // Element i's path and label without reading it (Dataset::source_path, source_label): by default
  // "<source:i>" and -1.
  virtual std::string path(std::size_t i) const;
  virtual std::int64_t label(std::size_t i) const;
  // Class names in label order (Dataset::class_names); none by default.
  virtual std::vector<std::string> class_names() const { return {}; }
  // Elements left out when the source was made (an image without its mask under Unpaired::skip, ...): each
  // iterator counts them among its skipped samples (PipelineStats, stage "source").
  virtual std::vector<SkippedSample> left_out() const { return {}; }
};

// What a source does with an element that lacks its partner file (an image without a mask, a mask without
// an image).
enum class Unpaired : std::uint8_t {
  fail,  // the source is not made: InvalidArgument naming both paths
  skip,  // the element is left out and counted (SampleSource::left_out, PipelineStats' skips)
};

// Dataset::segmentation_folder: ROOT/<images>/NAME.jpg|.jpeg|.png beside ROOT/<masks>/NAME.png, matched by
// file stem (NAME), at any depth below the two folders (the same relative folder on both sides).
struct SegmentationFolderOptions {
  std::string images = "images";
  std::string masks = "masks";
  Unpaired unpaired = Unpaired::fail;
};

// COCO's crowd annotations (iscrowd = 1: a region of many objects, boxed as one).
enum class CrowdBoxes : std::uint8_t {
  drop,  // left out (torchvision's detection references do this)
  keep,  // kept among the boxes, flagged (BoxList::crowd, the batch's crowd tensor), for a loss that
         // ignores them
};

// Dataset::coco_detection.
struct CocoOptions {
  CrowdBoxes crowd = CrowdBoxes::drop;
  // Box classes: true: 0..K-1 in the order of the categories' ids (the names are Dataset::class_names());
  // false: COCO's category_id as it stands (1..90 for COCO 2017, with gaps).
  bool contiguous_classes = true;
  // Leave out images without any (kept) box.
  bool skip_empty = false;
};

}  // namespace conveyor
