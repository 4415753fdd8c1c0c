// SampleSource's defaults (conveyor/source.h).
#include <string>

#include "conveyor/source.h"

namespace conveyor {

std::string SampleSource::describe() const { return "sample source " + std::to_string(size()); }

std::string SampleSource::path(std::size_t i) const { return "<source:" + std::to_string(i) + ">"; }

std::int64_t SampleSource::label(std::size_t) const { return -1; }

}  // namespace conveyor
