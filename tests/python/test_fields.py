"""Samples with fields from Python (issue 35): segmentation folders, COCO detection and shards with mask and
boxes members; masks, padded boxes, counts and multi-hot rows in batches through DLPack and numpy; the
fields on Sample; the field options. The masks are PNGs written here with the standard library (zlib), the
images make_test_jpegs's JPEGs."""
import io
import json
import pathlib
import shutil
import struct
import tarfile
import zlib

import numpy
import pytest

from support import conveyor


def png_gray(array):
    """A PNG of a 2-D uint8 array: signature, IHDR (8-bit gray), one IDAT, IEND."""
    height, width = array.shape

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + array[y].astype(numpy.uint8).tobytes() for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def jpeg_size(path):
    """(height, width) of a baseline JPEG from its SOF0 marker."""
    data = pathlib.Path(path).read_bytes()
    i = 2
    while i < len(data):
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            return struct.unpack(">HH", data[i + 5:i + 9])
        i += 2 + length
    raise ValueError(path)


@pytest.fixture(scope="module")
def annotated(image_folder, tmp_path_factory):
    """The fixture JPEGs as a segmentation folder and a COCO set: image k has one rectangle of class 1 + k % 3
    (in the mask, and as a box), in its middle half."""
    root = tmp_path_factory.mktemp("annotated")
    (root / "images").mkdir()
    (root / "masks").mkdir()
    coco = {"images": [], "annotations": [], "categories": [{"id": c, "name": f"c{c}"} for c in (1, 2, 3)]}
    for k, jpeg in enumerate(sorted(pathlib.Path(image_folder).rglob("*.jpg"))):
        name = f"{k:03d}"
        shutil.copy(jpeg, root / "images" / f"{name}.jpg")
        height, width = jpeg_size(jpeg)
        mask = numpy.zeros((height, width), numpy.uint8)
        x0, y0, x1, y1 = width // 4, height // 4, 3 * width // 4, 3 * height // 4
        mask[y0:y1, x0:x1] = 1 + k % 3
        (root / "masks" / f"{name}.png").write_bytes(png_gray(mask))
        coco["images"].append({"id": k, "file_name": f"{name}.jpg", "width": width, "height": height})
        coco["annotations"].append({"id": k, "image_id": k, "bbox": [x0, y0, x1 - x0, y1 - y0],
                                    "category_id": 1 + k % 3, "iscrowd": 0})
    (root / "instances.json").write_text(json.dumps(coco))
    return root


def test_segmentation_batches_stack_the_masks(annotated):
    dataset = conveyor.Dataset.segmentation_folder(annotated)
    assert dataset.fields == ["mask"]
    chain = (dataset.map(conveyor.ops.decode_random_resized_crop(32)).map(conveyor.ops.flip_horizontal(0.5))
             .with_options(threads=2, seed=3).batch(8, sample_shape=(32, 32, 3)))
    seen = 0
    for batch in chain:
        masks = numpy.from_dlpack(batch.masks)
        assert masks.shape == (len(batch), 32, 32) and masks.dtype == numpy.uint8
        assert batch.boxes is None and batch.multi_hot is None
        for k, info in enumerate(batch.samples):
            assert set(numpy.unique(masks[k])) <= {0, 1 + info.index % 3}  # nearest: no blended ids
        seen += len(batch)
    assert seen == 24


def test_coco_batches_pad_boxes_and_the_boxes_stay_on_the_rectangles(annotated):
    dataset = conveyor.Dataset.coco_detection(annotated / "instances.json", annotated / "images")
    assert dataset.class_names == ["c1", "c2", "c3"]
    for batch in dataset.map(conveyor.ops.decode_center_crop(40)).with_options(threads=2).batch(6):
        boxes, classes = numpy.from_dlpack(batch.boxes), numpy.asarray(batch.box_classes)
        counts = numpy.asarray(batch.box_counts)
        assert boxes.dtype == numpy.float32 and boxes.shape == (6, 1, 4)
        assert list(counts) == [1] * 6
        for k, info in enumerate(batch.samples):
            assert classes[k, 0] == info.index % 3  # contiguous: category 1 + k % 3 is class k % 3
            x0, y0, x1, y1 = boxes[k, 0]
            assert 0 <= x0 < x1 <= 40 and 0 <= y0 < y1 <= 40


def test_samples_show_their_fields_and_a_python_map_can_set_boxes_and_tags(annotated):
    def tag(sample):
        sample.set_boxes([(1, 2, 10, 12)], [4])
        sample.tags = [0, 2]

    dataset = conveyor.Dataset.segmentation_folder(annotated).take(2).map(conveyor.ops.decode())
    for sample in dataset.with_options(threads=1):
        mask = numpy.asarray(sample.mask)
        assert mask.shape == sample.shape[:2] and sample.encoded_mask[:4] == b"\x89PNG"
        assert sample.boxes == [] and sample.tags == []
    batch = next(iter(dataset.map(tag).map(conveyor.ops.resize(16, 16)).with_options(threads=1)
                      .batch(2, num_classes=3)))
    assert numpy.asarray(batch.multi_hot).tolist() == [[1, 0, 1], [1, 0, 1]]
    assert numpy.asarray(batch.box_classes).tolist() == [[4], [4]]


def test_the_mask_fill_is_an_option(annotated):
    dataset = (conveyor.Dataset.segmentation_folder(annotated).take(1)
               .map(conveyor.ops.decode()).map(conveyor.ops.pad(2, 0, 0, 0)))
    for fill in (255, 7):
        sample = next(iter(dataset.with_options(threads=1, mask_fill=fill)))
        assert numpy.asarray(sample.mask)[0, 0] == fill
    assert dataset.with_options(min_box_visibility=0.5).options.min_box_visibility == 0.5


def test_an_unpaired_image_raises_or_is_counted(annotated, tmp_path):
    root = tmp_path / "set"
    shutil.copytree(annotated, root)
    (root / "masks" / "000.png").unlink()
    with pytest.raises(conveyor.InvalidArgument, match="000"):
        conveyor.Dataset.segmentation_folder(root)
    iterator = iter(conveyor.Dataset.segmentation_folder(root, unpaired="skip").map(conveyor.ops.decode())
                    .with_options(threads=1))
    assert sum(1 for _ in iterator) == 23
    assert iterator.stats().skip_reasons["source: left_out"] == 1


def test_shards_with_mask_and_boxes_members(annotated, tmp_path):
    shard = tmp_path / "fields.tar"
    with tarfile.open(shard, "w") as tar:
        for k in range(4):
            name = f"{k:03d}"
            members = {
                f"{name}.jpg": (annotated / "images" / f"{name}.jpg").read_bytes(),
                f"{name}.mask.png": (annotated / "masks" / f"{name}.png").read_bytes(),
                f"{name}.json": json.dumps({"boxes": [[1, 1, 5, 5]], "classes": [k]}).encode(),
                f"{name}.cls": str(k).encode(),
            }
            for member, data in members.items():
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    dataset = conveyor.Dataset.tar_shards([str(shard)], mask_extension="mask.png", fields_extension="json",
                                          shuffle_shards=False, parallel_shards=1)
    assert dataset.fields == ["mask", "boxes"]
    labels = []
    for sample in dataset.map(conveyor.ops.decode()).with_options(threads=1):
        labels.append(sample.label)
        assert sample.box_classes == [sample.label] and sample.mask is not None
    assert labels == [0, 1, 2, 3]


def test_a_python_source_plugs_into_the_chain_with_its_fields(annotated):
    class Annotated:
        fields = ["mask", "boxes"]

        def __init__(self, root):
            self.images = sorted((root / "images").iterdir())
            self.root = root

        def __len__(self):
            return len(self.images)

        def read(self, i, sample):
            image = self.images[i]
            sample.path = str(image)
            sample.encoded = image.read_bytes()
            sample.encoded_mask = (self.root / "masks" / (image.stem + ".png")).read_bytes()
            sample.set_boxes([(20, 20, 30, 30)], [i])  # inside every centre crop of these images
            sample.label = i

    dataset = conveyor.Dataset.from_source(Annotated(annotated))
    assert dataset.source_size() == 24 and dataset.fields == ["mask", "boxes"]
    chain = (dataset.shuffle().shard(2, 1).map(conveyor.ops.decode_center_crop(16))
             .with_options(threads=2, seed=5).batch(4))
    seen = []
    for batch in chain:
        assert numpy.asarray(batch.masks).shape == (len(batch), 16, 16)
        labels = numpy.asarray(batch.labels)
        assert numpy.array_equal(numpy.asarray(batch.box_classes)[:, 0], labels)
        seen += [info.index for info in batch.samples]
    assert len(seen) == 12 and all(index % 2 == 1 for index in seen)


def test_field_tensors_are_reached_by_name_without_the_module_naming_them(annotated):
    coco = conveyor.Dataset.coco_detection(annotated / "instances.json", annotated / "images")
    batch = next(iter(coco.map(conveyor.ops.decode_center_crop(40)).with_options(threads=1).batch(4)))
    assert set(batch.fields) == {"boxes", "box_classes", "box_crowd", "box_counts"}
    assert numpy.array_equal(numpy.from_dlpack(batch.fields["boxes"]), numpy.from_dlpack(batch.boxes))
    assert batch.masks is None  # a kind the library knows, not in this batch
    with pytest.raises(AttributeError):
        batch.no_such_tensor
    sample = next(iter(conveyor.Dataset.segmentation_folder(annotated).take(1).map(conveyor.ops.decode())
                       .with_options(threads=1)))
    assert set(sample.fields) == {"mask"}
    assert numpy.asarray(sample.fields["mask"]).shape == sample.shape[:2]
    feeder = conveyor.DeviceFeeder("cpu")
    for device_batch in feeder.feed(coco.map(conveyor.ops.decode_center_crop(40)).with_options(threads=1).batch(4)):
        assert set(device_batch.fields) == set(batch.fields)
        assert device_batch.multi_hot is None
        break


def test_coco_keypoints_batch_beside_the_boxes_and_reach_python(annotated, tmp_path):
    coco = json.loads((annotated / "instances.json").read_text())
    coco["categories"][0]["keypoints"] = ["left", "right"]
    for annotation in coco["annotations"]:
        x, y, w, h = annotation["bbox"]
        annotation["keypoints"] = [x + 1, y + h / 2, 2, x + w - 1, y + h / 2, 2]
    (tmp_path / "keypoints.json").write_text(json.dumps(coco))
    dataset = conveyor.Dataset.coco_detection(tmp_path / "keypoints.json", annotated / "images")
    assert dataset.fields == ["boxes", "keypoints"]
    for batch in dataset.map(conveyor.ops.decode_center_crop(40)).with_options(threads=2).batch(6):
        keypoints = numpy.from_dlpack(batch.keypoints)
        assert keypoints.dtype == numpy.float32 and keypoints.shape == (6, 1, 2, 3)
        assert list(numpy.asarray(batch.keypoint_counts)) == [1] * 6
        boxes = numpy.from_dlpack(batch.boxes)
        for k in range(6):
            for x, y, v in keypoints[k, 0]:
                if v > 0:
                    assert boxes[k, 0, 0] <= x <= boxes[k, 0, 2] and boxes[k, 0, 1] <= y <= boxes[k, 0, 3]
    sample = next(iter(dataset.take(1).map(conveyor.ops.decode()).with_options(threads=1)))
    assert numpy.asarray(sample.keypoints).shape == (1, 2, 3)
    assert conveyor.field_kinds() == ["mask", "boxes", "tags", "keypoints"]
