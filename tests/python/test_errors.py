"""Errors from Python: conveyor's exception types with their context (path, stage, reason), the fail and
skip policies, and Python exceptions raised inside a Python map."""
import pathlib

import pytest

from support import conveyor


@pytest.fixture
def folder_with_a_bad_file(image_folder, tmp_path):
    """The image folder plus one truncated JPEG, as class_1/bad.jpg (copied, so the session's folder stays)."""
    root = tmp_path / "train"
    for source in pathlib.Path(image_folder).rglob("*.jpg"):
        target = root / source.parent.name / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    good = (root / "class_1" / "image_000.jpg").read_bytes()
    (root / "class_1" / "bad.jpg").write_bytes(good[: len(good) // 3])
    return root


def decoded(folder, on_error):
    return (conveyor.Dataset.image_folder(folder).map(conveyor.ops.decode_random_resized_crop(24))
            .with_options(threads=2, on_error=on_error))


def test_exception_types_mirror_the_cpp_hierarchy():
    assert issubclass(conveyor.Error, RuntimeError)
    for name in ("DecodeError", "IoError", "InvalidArgument", "PipelineError", "DeviceError"):
        assert issubclass(getattr(conveyor, name), conveyor.Error)
    assert issubclass(conveyor.InvalidArgument, ValueError)
    assert issubclass(conveyor.IoError, OSError)
    assert issubclass(conveyor.DeviceMemoryError, conveyor.DeviceError)


def test_a_failing_element_raises_pipeline_error_with_path_stage_and_reason(folder_with_a_bad_file):
    bad = str(folder_with_a_bad_file / "class_1" / "bad.jpg")
    with pytest.raises(conveyor.PipelineError) as caught:
        for _ in decoded(folder_with_a_bad_file, "fail").batch(4):
            pass
    error = caught.value
    assert error.path == bad
    assert error.stage == "decode_random_resized_crop"
    assert error.reason and error.reason in str(error)
    assert f"stage 'decode_random_resized_crop' failed on '{bad}'" in str(error)


def test_the_iterator_ends_after_a_pipeline_error(folder_with_a_bad_file):
    it = iter(decoded(folder_with_a_bad_file, "fail"))
    with pytest.raises(conveyor.PipelineError):
        for _ in it:
            pass
    with pytest.raises(StopIteration):
        next(it)


def test_skip_drops_the_bad_file_and_counts_it_with_its_reason(folder_with_a_bad_file):
    it = iter(decoded(folder_with_a_bad_file, "skip").batch(5))
    sizes = [len(batch) for batch in it]
    assert sum(sizes) == 24 and sizes == [5, 5, 5, 5, 4]  # batches stay full
    stats = it.stats()
    assert stats.skipped == 1
    assert list(stats.skip_reasons) == ["decode_random_resized_crop: truncated"]
    (skipped,) = stats.skipped_samples
    assert skipped.path.endswith("bad.jpg") and skipped.stage == "decode_random_resized_crop" and skipped.reason


def test_a_missing_file_fails_in_the_read_stage(image_paths, tmp_path):
    missing = str(tmp_path / "nowhere.jpg")
    ds = conveyor.Dataset.files(image_paths[:2] + [missing]).map(conveyor.ops.decode())
    with pytest.raises(conveyor.PipelineError) as caught:
        list(ds)
    assert (caught.value.path, caught.value.stage) == (missing, "read")


def test_bytes_that_are_not_a_jpeg_fail_in_memory_too():
    ds = conveyor.Dataset.memory([b"GIF89a not a jpeg"]).map(conveyor.ops.decode())
    with pytest.raises(conveyor.PipelineError, match="<memory:0>") as caught:
        list(ds)
    assert caught.value.stage == "decode"


def test_a_missing_folder_raises_io_error(tmp_path):
    with pytest.raises(conveyor.IoError):
        conveyor.Dataset.image_folder(tmp_path / "absent")
    with pytest.raises(OSError):
        conveyor.Dataset.image_folder(tmp_path / "absent")


def test_bad_arguments_raise_invalid_argument(image_folder):
    with pytest.raises(conveyor.InvalidArgument, match="interpolation must be one of 'linear', 'nearest', 'area'"):
        conveyor.ops.resize(8, 8, interpolation="cubic")
    with pytest.raises(ValueError):
        conveyor.Dataset.image_folder(image_folder).shard(2, 5)


def test_an_exception_in_a_python_map_becomes_a_pipeline_error(image_paths):
    def broken(sample):
        raise KeyError("no such thing")

    ds = conveyor.Dataset.files(image_paths[:3]).map(broken, name="broken").with_options(threads=2)
    with pytest.raises(conveyor.PipelineError) as caught:
        list(ds)
    assert caught.value.stage == "broken"
    assert caught.value.reason == "KeyError: 'no such thing'"


def test_an_exception_in_a_python_map_is_skipped_like_any_other(image_paths):
    def odd_fails(sample):
        if sample.index % 2:
            raise ValueError("odd")

    it = iter(conveyor.Dataset.files(image_paths[:6]).map(odd_fails).with_options(on_error="skip"))
    assert [s.index for s in it] == [0, 2, 4]
    assert it.stats().skip_reasons == {"map: error": 3}


def test_a_python_map_that_returns_a_value_is_an_error(image_paths):
    ds = conveyor.Dataset.files(image_paths[:1]).map(lambda s: 1)
    with pytest.raises(conveyor.PipelineError, match="returns None; it returned a int"):
        list(ds)
