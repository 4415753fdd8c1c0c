// own_geometric_op --annotations FILE --images DIR [--count N] [--seed S]: a geometric op of the user's own,
// written with the one geometry call, moving every field of a sample as the library's ops do.
//
// random_zoom(min_scale) draws one window (each side min_scale..1 of the image's, at a random place) from the
// sample's seed and hands it to ops::apply_geometry, which resamples the image and moves each field by its
// type's rule: boxes mapped, clipped and dropped when they leave the picture (with their instances in every
// other per-instance field, keypoints among them), a mask by nearest neighbour, a kind of your own by its
// move(). The op names no field. The program runs decode() then random_zoom(0.5) over a COCO set's first N
// images and prints, per sample, each field before and after, and checks that every box lies in the picture.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/ops.h"
#include "conveyor/ops/apply_geometry.h"

namespace {

using namespace conveyor;

// The op's kind of randomness (its draws: Rng(seed, op_stream(kZoomStream, its position in the chain))).
constexpr std::uint64_t kZoomStream = 0x7a6f6f6d'00000001;

SampleOp random_zoom(double min_scale) {
  return {"random_zoom", [min_scale](Sample& sample) {
            const ConstImageView image = sample.image();
            Rng rng = sample.rng(kZoomStream);
            const int width = static_cast<int>(image.width * rng.uniform(min_scale, 1.0));
            const int height = static_cast<int>(image.height * rng.uniform(min_scale, 1.0));
            const ops::Rect window{static_cast<int>(rng.uniform() * (image.width - width + 1)),
                                   static_cast<int>(rng.uniform() * (image.height - height + 1)), width,
                                   height};
            // One change for the image and every field: the window, resized back to the image's size.
            ops::apply_geometry(sample, ops::GeometryChange::crop_resize(image.height, image.width, window,
                                                                         image.height, image.width));
          }};
}

// "boxes 3, box_classes 3, ..." : each field tensor's first extent.
std::string describe(const Sample& sample) {
  std::vector<BatchTensor> tensors;
  for (std::size_t i = 0; i < sample.fields().size(); ++i)
    if (!sample.fields()[i].empty()) sample.fields()[i].tensors(tensors);
  std::string out;
  for (const BatchTensor& tensor : tensors)
    out += (out.empty() ? "" : ", ") + std::string(tensor.name) + " " + std::to_string(tensor.view.shape[0]);
  return out.empty() ? "no fields" : out;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"A geometric op of your own, moving every field with the image."};
  std::string annotations, images;
  int count = 8;
  std::uint64_t seed = 0;
  app.add_option("--annotations", annotations, "a COCO instances (or person keypoints) JSON (required)")
      ->required();
  app.add_option("--images", images, "the folder of its images (required)")->required();
  app.add_option("--count", count, "images, the set's first")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--seed", seed, "seed of the zoom")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const Dataset decoded = Dataset::coco_detection(annotations, images)
                              .take(static_cast<std::uint64_t>(count))
                              .map(ops::decode())
                              .with_options({.threads = 1, .seed = seed});
  const Dataset zoomed = decoded.map(random_zoom(0.5));
  SampleIterator before = decoded.begin();
  int outside = 0, i = 0;
  for (const Sample& after : zoomed) {
    const std::optional<Sample> original = before.next();
    std::printf("sample %d: %s -> %s\n", i++, original ? describe(*original).c_str() : "?",
                describe(after).c_str());
    const ConstImageView image = after.image();
    for (const Box& box : after.boxes.boxes())
      outside += box.x0 < 0 || box.y0 < 0 || box.x1 > image.width || box.y1 > image.height ? 1 : 0;
  }
  std::printf("own_geometric_op: %d samples, %d boxes outside the picture\n", i, outside);
  return outside == 0 ? 0 : 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "own_geometric_op: %s\n", error.what());
  return 1;
}
