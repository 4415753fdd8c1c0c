"""Remote shards from Python: tar_shards over HTTP through the shard cache, and the cache's counts in
PipelineStats.remote."""
import functools
import http.server
import io
import struct
import tarfile
import threading

import pytest

from support import conveyor


@pytest.fixture
def served_shard(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    with tarfile.open(folder / "shard.tar", "w") as tar:
        for n in range(5):
            for member, data in ((f"{n:03d}.jpg", struct.pack("<Q", n)), (f"{n:03d}.cls", str(n).encode())):
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/shard.tar"
    server.shutdown()
    thread.join()


def test_remote_shards_are_fetched_once_then_read_from_the_cache(served_shard, tmp_path):
    counts = []
    for _ in range(2):
        dataset = conveyor.Dataset.tar_shards([served_shard], cache_bytes=1 << 20, cache_folder=str(tmp_path / "cache"))
        iterator = iter(dataset.with_options(threads=1))
        labels = sorted(sample.label for sample in iterator)
        assert labels == [0, 1, 2, 3, 4]
        remote = iterator.stats().remote
        counts.append((remote.cache_hits, remote.cache_misses, remote.bytes_fetched > 0))
    assert counts == [(0, 1, True), (1, 0, False)]
