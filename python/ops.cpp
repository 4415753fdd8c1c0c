// conveyor.ops: the built-in image ops as pipeline stages (conveyor/ops/sample_ops.h), each a SampleOp for
// Dataset.map. The option structs of C++ become keyword arguments with the same names, their enumerations
// strings: decode_random_resized_crop(224, scale_min=0.35, interpolation="area", fast=True).
#include <cstdint>
#include <string>

#include "conveyor/ops/sample_ops.h"
#include "python/bindings.h"
#include "python/choices.h"

namespace conveyor::python {
namespace {

constexpr Choice<ops::ColorMode> kColorModes[] = {
    {"rgb", ops::ColorMode::rgb}, {"gray", ops::ColorMode::gray}, {"keep", ops::ColorMode::keep}};
constexpr Choice<ops::Interpolation> kInterpolations[] = {{"linear", ops::Interpolation::linear},
                                                          {"nearest", ops::Interpolation::nearest},
                                                          {"area", ops::Interpolation::area}};
constexpr Choice<ops::PadMode> kPadModes[] = {{"constant", ops::PadMode::constant},
                                              {"edge", ops::PadMode::edge},
                                              {"reflect", ops::PadMode::reflect},
                                              {"symmetric", ops::PadMode::symmetric}};

ops::DecodeOptions decode_options(const std::string& color, bool apply_exif_orientation,
                                  std::size_t max_pixels, bool warnings_are_errors, bool fast) {
  return {.color = parse_choice("color", color, kColorModes),
          .apply_exif_orientation = apply_exif_orientation,
          .max_pixels = max_pixels,
          .warnings_are_errors = warnings_are_errors,
          .fast = fast};
}

// The keyword arguments of DecodeOptions, shared by the three decoding ops.
#define CONVEYOR_DECODE_ARGS                                                                       \
  py::arg("color") = "rgb", py::arg("apply_exif_orientation") = false,                             \
  py::arg("max_pixels") = ops::DecodeOptions{}.max_pixels, py::arg("warnings_are_errors") = false, \
  py::arg("fast") = false

constexpr const char* kDecodeDoc =
    "Decode options: color \"rgb\" (3 channels whatever the file holds), \"gray\" or \"keep\"; "
    "apply_exif_orientation turns the image upright; images over max_pixels are refused before any "
    "allocation; warnings_are_errors makes libjpeg's warnings (corrupt but decodable data) errors; fast "
    "uses libjpeg's fast IDCT and plain chroma upsampling (10-20 % faster, about 0.6 levels of mean "
    "difference).";

}  // namespace

void bind_ops(py::module_& ops_module) {
  py::class_<SampleOp>(ops_module, "SampleOp",
                       "A named step that transforms one sample (made by the functions of conveyor.ops, "
                       "given to Dataset.map). The name appears in errors, stats and traces.")
      .def_property_readonly("name", [](const SampleOp& op) { return op.name; })
      .def("__repr__", [](const SampleOp& op) { return "conveyor.ops.SampleOp('" + op.name + "')"; });

  ops_module.def(
      "decode",
      [](const std::string& color, bool exif, std::size_t max_pixels, bool warnings_are_errors, bool fast) {
        return ops::decode(decode_options(color, exif, max_pixels, warnings_are_errors, fast));
      },
      py::kw_only(), CONVEYOR_DECODE_ARGS,
      (std::string("The whole image, decoded from the sample's bytes (shape from the JPEG header).") +
       kDecodeDoc)
          .c_str());

  ops_module.def(
      "decode_random_resized_crop",
      [](int size, double scale_min, double scale_max, double ratio_min, double ratio_max,
         const std::string& interpolation, const std::string& color, bool exif, std::size_t max_pixels,
         bool warnings_are_errors, bool fast) {
        return ops::decode_random_resized_crop(
            size, {.scale_min = scale_min,
                   .scale_max = scale_max,
                   .ratio_min = ratio_min,
                   .ratio_max = ratio_max,
                   .interpolation = parse_choice("interpolation", interpolation, kInterpolations),
                   .decode = decode_options(color, exif, max_pixels, warnings_are_errors, fast)});
      },
      py::arg("size"), py::kw_only(), py::arg("scale_min") = 0.08, py::arg("scale_max") = 1.0,
      py::arg("ratio_min") = 3.0 / 4, py::arg("ratio_max") = 4.0 / 3, py::arg("interpolation") = "linear",
      CONVEYOR_DECODE_ARGS,
      (std::string(
           "size x size: torchvision's RandomResizedCrop, decoding only the window, at the DCT scale (1/2, "
           "1/4, 1/8) it allows, then resizing it. The window covers [scale_min, scale_max] of the area "
           "with a width/height ratio in [ratio_min, ratio_max] (log-uniform); interpolation \"linear\", "
           "\"nearest\" or \"area\".") +
       kDecodeDoc)
          .c_str());

  ops_module.def(
      "decode_center_crop",
      [](int size, const std::string& color, bool exif, std::size_t max_pixels, bool warnings_are_errors,
         bool fast) {
        return ops::decode_center_crop(size,
                                       decode_options(color, exif, max_pixels, warnings_are_errors, fast));
      },
      py::arg("size"), py::kw_only(), CONVEYOR_DECODE_ARGS,
      (std::string("size x size: the evaluation transform (shorter side to size, centre crop), decoding only "
                   "the centre, at the DCT scale it allows.") +
       kDecodeDoc)
          .c_str());

  ops_module.def(
      "random_crop",
      [](int height, int width, int padding, const std::string& mode) {
        return ops::random_crop(height, width, padding, parse_choice("mode", mode, kPadModes));
      },
      py::arg("height"), py::arg("width"), py::arg("padding") = 0, py::arg("mode") = "constant",
      "height x width at a random place of the image padded by `padding` on every side (torchvision's "
      "RandomCrop); mode \"constant\" (zeros), \"edge\", \"reflect\" or \"symmetric\" makes up the margin.");

  ops_module.def(
      "pad",
      [](int top, int bottom, int left, int right, const std::string& mode, std::uint8_t value) {
        return ops::pad(top, bottom, left, right, parse_choice("mode", mode, kPadModes), value);
      },
      py::arg("top"), py::arg("bottom"), py::arg("left"), py::arg("right"), py::arg("mode") = "constant",
      py::arg("value") = 0,
      "The image with margins; mode \"constant\" (of `value`), \"edge\", \"reflect\" or \"symmetric\".");

  ops_module.def("flip_horizontal", static_cast<SampleOp (*)(double)>(&ops::flip_horizontal),
                 py::arg("p") = 0.5, "Mirrors the image left-right, in place, with probability p.");
  ops_module.def("flip_vertical", static_cast<SampleOp (*)(double)>(&ops::flip_vertical), py::arg("p") = 0.5,
                 "Mirrors the image top-bottom, in place, with probability p.");

  ops_module.def(
      "distort",
      [](double brightness, double contrast, double saturation, double hue) {
        return ops::distort(
            {.brightness = brightness, .contrast = contrast, .saturation = saturation, .hue = hue});
      },
      py::kw_only(), py::arg("brightness") = 0.0, py::arg("contrast") = 0.0, py::arg("saturation") = 0.0,
      py::arg("hue") = 0.0,
      "Colour jitter in place, as torchvision's ColorJitter: factors drawn from [max(0, 1 - b), 1 + b] for "
      "brightness, contrast and saturation and a hue shift from [-hue, hue] turns (hue <= 0.5), applied in "
      "a random order. 0 leaves an adjustment out.");

  ops_module.def(
      "resize",
      [](int height, int width, const std::string& interpolation) {
        return ops::resize(height, width, parse_choice("interpolation", interpolation, kInterpolations));
      },
      py::arg("height"), py::arg("width"), py::arg("interpolation") = "linear",
      "The image resized to height x width (OpenCV); interpolation \"linear\", \"nearest\" or \"area\".");

  ops_module.def(
      "random_resized_crop",
      [](int size, double scale_min, double scale_max, double ratio_min, double ratio_max,
         const std::string& interpolation) {
        return ops::random_resized_crop(
            size, {.scale_min = scale_min,
                   .scale_max = scale_max,
                   .ratio_min = ratio_min,
                   .ratio_max = ratio_max,
                   .interpolation = parse_choice("interpolation", interpolation, kInterpolations),
                   .decode = {}});
      },
      py::arg("size"), py::kw_only(), py::arg("scale_min") = 0.08, py::arg("scale_max") = 1.0,
      py::arg("ratio_min") = 3.0 / 4, py::arg("ratio_max") = 4.0 / 3, py::arg("interpolation") = "linear",
      "RandomResizedCrop of decoded pixels (after decode(); decode_random_resized_crop decodes only the "
      "window): the same draws.");
  ops_module.def("center_crop", &ops::center_crop, py::arg("height"), py::arg("width"),
                 "The centre height x width of the image (padded when larger: zeros, masks mask_fill).");
  ops_module.def(
      "crop",
      [](int x, int y, int width, int height) {
        return ops::crop(ops::Rect{x, y, width, height});
      },
      py::arg("x"), py::arg("y"), py::arg("width"), py::arg("height"),
      "The fixed window [x, x + width) x [y, y + height) (reaching outside: padded as center_crop).");
}

#undef CONVEYOR_DECODE_ARGS

}  // namespace conveyor::python
