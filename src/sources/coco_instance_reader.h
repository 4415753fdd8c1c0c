// How a per-instance field other than the boxes is read from a COCO file (keypoints, ...): the COCO source
// decides which annotations it keeps (their boxes), hands each kept annotation to every reader the file
// calls for, in order, and asks each reader for an image's run of annotations when it reads the image. A
// kind that COCO can carry names its reader in its entry of src/sources/field_kinds.cpp.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "conveyor/fields/field.h"
#include "conveyor/sample.h"

namespace conveyor::detail {

class CocoInstanceReader {
 public:
  virtual ~CocoInstanceReader() = default;
  // The next kept annotation (`what` names it in errors). Throws InvalidArgument for a malformed one.
  virtual void add(const nlohmann::json& annotation, const std::string& what) = 0;
  // Annotations [first, end) of the kept ones (one image's) into `sample`'s field of this kind.
  virtual void read(std::size_t first, std::size_t end, Sample& sample) const = 0;
  // An empty field as the source's samples carry it (FieldSet::others): what batches make room by.
  virtual std::shared_ptr<const Field> prototype() const = 0;
};

// Makes a reader for a COCO file's root (its categories), or null when the file does not carry the kind.
using CocoReaderFactory = std::unique_ptr<CocoInstanceReader> (*)(const nlohmann::json& root,
                                                                  const std::string& where);

}  // namespace conveyor::detail
