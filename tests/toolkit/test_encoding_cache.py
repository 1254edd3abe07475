"""The sharded feature cache (toolkit.feature_store): round trips, memory-mapped reads, shards per text
count, concurrent writers, partial writes and damaged shards."""

from __future__ import annotations

import logging
import multiprocessing
from pathlib import Path

import numpy as np
import pytest

from toolkit.feature_store import ShardStore, cache_key, namespace_folder


def store(folder: Path) -> ShardStore:
    return ShardStore(folder, row_shape=(2, 3), dtype=np.float16, description={"what": "test"})


def arrays(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(int(rng.integers(1, 5)), 2, 3)).astype(np.float16) for _ in range(n)]


def test_rows_come_back_exactly_memory_mapped_and_other_instances_see_new_shards(tmp_path: Path):
    writer, reader = store(tmp_path), store(tmp_path)
    keys = [cache_key(f"text {i}") for i in range(30)]
    values = arrays(30, 0)
    assert reader.find(keys) == [None] * 30  # nothing written yet: no index, no error
    writer.add(keys[:20], values[:20])
    writer.add(keys[20:], values[20:])
    for instance in (writer, reader):  # the reader loads the shards the index lists since it last looked
        where = instance.find([*keys, cache_key("never written")])
        assert where[-1] is None
        for w, expected in zip(where[:-1], values, strict=True):
            rows = instance.rows(w)
            assert isinstance(rows, np.memmap) and np.array_equal(rows, expected)
    assert reader.stats() == {"shards": 2, "texts": 30}
    assert len(list(tmp_path.glob("*.rows.npy"))) == 2


def test_reading_many_shards_keeps_only_a_few_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from toolkit import feature_store

    monkeypatch.setattr(feature_store, "OPEN_SHARDS", 2)
    writer = store(tmp_path)
    values = arrays(6, 4)
    for i, value in enumerate(values):
        writer.add([cache_key(str(i))], [value])
    reader = store(tmp_path)
    for _ in range(2):
        for i, value in enumerate(values):
            (where,) = reader.find([cache_key(str(i))])
            assert np.array_equal(reader.rows(where), value)
    assert len(reader._rows) == 2


def test_namespaces_are_folders_by_description(tmp_path: Path):
    a = namespace_folder(tmp_path, {"encoder": "x", "layers": [0, 1]})
    assert a == namespace_folder(tmp_path, {"layers": [0, 1], "encoder": "x"})
    assert a != namespace_folder(tmp_path, {"encoder": "x", "layers": [0, 1, 2]})


def test_a_shard_not_in_the_index_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    keys, values = [cache_key("a"), cache_key("b")], arrays(2, 1)
    first = store(tmp_path)

    # a crash while writing the keys file: the rows file is in place, the keys file and the index are not
    real_save = np.save

    def failing_save(handle, array, **kwargs):
        if array.dtype.names:
            raise OSError("disk full")
        real_save(handle, array, **kwargs)

    monkeypatch.setattr(np, "save", failing_save)
    with pytest.raises(OSError, match="disk full"):
        first.add(keys, values)
    monkeypatch.undo()
    assert len(list(tmp_path.glob("*.rows.npy"))) == 1 and not list(tmp_path.glob("*.keys.npy"))
    assert not list(tmp_path.glob(".*.tmp"))  # no half-written temporary left behind
    assert store(tmp_path).find(keys) == [None, None]
    first.add(keys, values)  # written again, now complete
    assert store(tmp_path).find(keys)[0] is not None


def test_a_damaged_shard_is_dropped_from_the_index_and_its_texts_are_missing(tmp_path: Path, caplog):
    writer = store(tmp_path)
    writer.add([cache_key("a")], arrays(1, 2))
    writer.add([cache_key("b")], arrays(1, 3))
    damaged = sorted(tmp_path.glob("*.rows.npy"), key=lambda p: p.stat().st_mtime_ns)[0]
    damaged.write_bytes(b"not an array")
    with caplog.at_level(logging.WARNING, logger="harness"):
        found = store(tmp_path).find([cache_key("a"), cache_key("b")])
    assert found[0] is None and found[1] is not None
    assert "unreadable" in caplog.text
    assert damaged.name.removesuffix(".rows.npy") not in (tmp_path / "index.txt").read_text()
    assert store(tmp_path).stats()["shards"] == 1


def _write_shards(folder: str, worker: int, shards: int) -> None:
    target = store(Path(folder))
    for s in range(shards):
        keys = [cache_key(f"{worker}-{s}-{i}") for i in range(5)]
        target.add(keys, [np.full((1, 2, 3), worker * 100 + s, dtype=np.float16)] * 5)


def test_concurrent_writers_lose_no_shard(tmp_path: Path):
    workers, shards = 4, 15
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_write_shards, args=(str(tmp_path), w, shards)) for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    reader = store(tmp_path)
    assert reader.stats() == {"shards": workers * shards, "texts": workers * shards * 5}
    for w in range(workers):
        for s in range(shards):
            (where,) = reader.find([cache_key(f"{w}-{s}-3")])
            assert reader.rows(where)[0, 0, 0] == w * 100 + s


def test_layer_features_write_one_shard_per_group_and_read_them_back(tmp_path: Path, monkeypatch):
    pytest.importorskip("transformers")
    from helpers.tiny_encoder import make_tiny_encoder

    from toolkit import layer_features as features

    encoder = make_tiny_encoder(tmp_path / "enc", layers=2, hidden=8)
    monkeypatch.setattr(features, "TEXTS_PER_SHARD", 5)
    texts = [f"text {'abcdefghijkl'[i]} " + "and the cat " * (i % 7) * 5 for i in range(12)]  # no digits: masked
    first = features.LayerFeatures(str(encoder), max_tokens=16, cache_dir=tmp_path / "cache")
    computed = first.features([*texts, texts[0]])  # a text twice: computed once
    assert first.stats == {
        "computed_texts": 12,
        "computed_chunks": sum(len(a) for a in computed[:12]),
        "cached_texts": 0,
    }
    assert len(list((tmp_path / "cache").rglob("*.rows.npy"))) == 3  # 12 texts, 5 a shard
    assert not list((tmp_path / "cache").rglob("features/*"))  # the per-text layout of earlier versions is gone
    again = features.LayerFeatures(str(encoder), max_tokens=16, cache_dir=tmp_path / "cache")
    for a, b in zip(again.features(texts), computed, strict=False):
        assert a.dtype == np.float32 and np.array_equal(a, b)
    assert again.stats == {"computed_texts": 0, "computed_chunks": 0, "cached_texts": 12}
    other = features.LayerFeatures(str(encoder), max_tokens=20, cache_dir=tmp_path / "cache")
    other.features(texts[:1])  # other chunking: another namespace, computed
    assert other.stats["computed_texts"] == 1 and other.store.folder != again.store.folder
