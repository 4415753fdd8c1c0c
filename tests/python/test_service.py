"""The data service from Python: a dispatcher and a worker in this process, conveyor.Dataset.from_service
reading every sample of every epoch once, a chain of the user's own registered by name with a Python
builder, the workers' status, and a ServiceError with its kind."""
import time

import pytest

from support import conveyor


def wait_for_workers(url, n):
    for _ in range(500):
        if conveyor.service.status(url).count(" alive ") >= n:
            return
        time.sleep(0.01)
    raise AssertionError("no worker registered:\n" + conveyor.service.status(url))


@pytest.fixture
def service():
    dispatcher = conveyor.service.Dispatcher(host="127.0.0.1")
    url = f"grpc://127.0.0.1:{dispatcher.port}"
    yield dispatcher, url
    del dispatcher


def test_from_service_gives_every_sample_of_every_epoch_once(service, image_folder):
    dispatcher, url = service
    worker = conveyor.service.Worker(url, host="127.0.0.1", threads=1)
    wait_for_workers(url, 1)
    ds = conveyor.Dataset.from_service(url, "standard", {"data": str(image_folder), "size": "16"}, seed=3,
                                       batch_size=4, epochs=2, split_batches=2, local_fallback=False)
    seen = {}
    for batch in ds:
        for info in batch.samples:
            seen[(info.epoch, info.index)] = seen.get((info.epoch, info.index), 0) + 1
    assert len(seen) == 2 * 24 and set(seen.values()) == {1}
    assert worker.counters["batches"] == 12
    assert "standard" in conveyor.service.status(url)


@pytest.mark.parametrize("shared_memory_mb,trainer_shares", [(2048, True), (2048, False), (0, True)])
def test_a_worker_of_this_host_lends_batches_through_shared_memory_when_both_sides_agree(
        service, image_folder, shared_memory_mb, trainer_shares):
    dispatcher, url = service
    worker = conveyor.service.Worker(url, host="127.0.0.1", threads=1, shared_memory_mb=shared_memory_mb)
    wait_for_workers(url, 1)
    ds = conveyor.Dataset.from_service(url, "standard", {"data": str(image_folder), "size": "16"}, batch_size=4,
                                       epochs=1, split_batches=2, local_fallback=False,
                                       shared_memory=trainer_shares)
    assert sum(batch.size for batch in ds) == 24
    pixels = 24 * 16 * 16 * 3
    counters = worker.counters
    if shared_memory_mb and trainer_shares:
        assert counters["bytes_lent"] >= pixels and counters["bytes_sent"] < pixels // 4
    else:
        assert counters["bytes_lent"] == 0 and counters["bytes_sent"] > pixels


@pytest.mark.parametrize("streams", [1, 3])
def test_any_number_of_streams_a_worker_gives_every_sample_once(service, image_folder, streams):
    dispatcher, url = service
    worker = conveyor.service.Worker(url, host="127.0.0.1", threads=1)
    wait_for_workers(url, 1)
    ds = conveyor.Dataset.from_service(url, "standard", {"data": str(image_folder), "size": "16"}, batch_size=4,
                                       epochs=1, split_batches=2, local_fallback=False, local_gpu_first=False,
                                       streams_per_worker=streams)
    seen = [(info.epoch, info.index) for batch in ds for info in batch.samples]
    assert len(seen) == 24 and len(set(seen)) == 24
    assert worker.counters["batches"] == 6


def test_a_chain_of_ones_own_is_built_by_name_from_a_python_builder(service, image_folder):
    dispatcher, url = service
    built = []

    def photos(parameters):
        built.append(parameters)
        size = int(parameters["size"])
        chain = conveyor.Dataset.image_folder(parameters["data"]).map(conveyor.ops.decode_random_resized_crop(size))
        return chain, (size, size, 3)

    worker = conveyor.service.Worker(url, host="127.0.0.1", threads=1, chains={"photos": photos})
    wait_for_workers(url, 1)
    ds = conveyor.Dataset.from_service(url, "photos", {"data": str(image_folder), "size": "8"}, batch_size=8,
                                       local_fallback=False, chains={"photos": photos})
    assert sum(len(batch.samples) for batch in ds) == 24
    assert built and built[0]["size"] == "8"
    del worker


def test_a_wrong_token_is_a_service_error_of_its_kind(service, image_folder):
    dispatcher, url = service
    worker = conveyor.service.Worker(url, host="127.0.0.1", threads=1)  # noqa: F841 (serves while it lives)
    wait_for_workers(url, 1)
    parameters = {"data": str(image_folder), "size": "16"}
    conveyor.Dataset.from_service(url, "standard", parameters, job="shared", token="right")
    with pytest.raises(conveyor.service.ServiceError) as raised:
        conveyor.Dataset.from_service(url, "standard", parameters, job="shared", token="wrong")
    assert raised.value.kind == "unauthorized"
    assert isinstance(raised.value, conveyor.Error)
