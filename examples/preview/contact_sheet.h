// preview's contact sheet: the augmented samples side by side, each with its mask laid over it (a colour
// per class id) and its boxes drawn, so that a glance tells whether image, mask and boxes still agree.
#pragma once

#include <vector>

#include "conveyor/sample.h"

namespace preview {

// One tile per sample (all of one size), `columns` to a row, a 4-pixel gap; RGB.
conveyor::Image contact_sheet(const std::vector<conveyor::Sample>& samples, int columns);

}  // namespace preview
