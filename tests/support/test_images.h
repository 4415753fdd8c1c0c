// Fixtures for tests: deterministic pictures and real JPEG files made from them with TurboJPEG.
#pragma once

#include <cstdint>
#include <vector>

#include "conveyor/image.h"

namespace conveyor::testing {

enum class Subsampling { s444, s422, s420, gray };

// A deterministic picture with smooth gradients, edges and texture (so JPEG has real work to do).
// channels is 1 or 3.
Image make_picture(int height, int width, int channels, std::uint64_t seed = 1);

// The picture encoded as a JPEG. A gray subsampling needs a 1-channel image, the others 3 channels.
std::vector<std::uint8_t> encode_jpeg(ConstImageView image, int quality = 90,
                                      Subsampling subsampling = Subsampling::s420, bool progressive = false);

// Shorthand: encode_jpeg(make_picture(...)).
std::vector<std::uint8_t> make_jpeg(int height, int width, int channels = 3, std::uint64_t seed = 1,
                                    int quality = 90, bool progressive = false);

// Largest absolute difference between two images of the same shape (255 when the shapes differ).
int max_abs_diff(ConstImageView a, ConstImageView b);
// Mean absolute difference per byte.
double mean_abs_diff(ConstImageView a, ConstImageView b);

}  // namespace conveyor::testing
