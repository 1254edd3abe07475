"""Checkpoints are inputs too (issue 14, items 6, 7 and 8).

6. A checkpoint records a checksum of its content (parameters and fitted state) and of its weights file;
   an edited or corrupted one is refused in one line naming the file. Checkpoints written before the
   checksum still load (unchecked), and a state whose shapes do not fit its parameters is refused.
7. Paths and devices are run-time settings: loading never takes them from the checkpoint.
8. A broken config.json or weights file, or an inverted or NaN abstain band: one line naming the file.

Fast systems fitted on the PAN 2023 format sample; a tiny random encoder for item 7.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers.paths import TESTS

from core.errors import HarnessError
from core.records import VerificationProblem
from harness.cli import main
from systems.baselines.cngdist import CharNgramDistance
from systems.baselines.compressor import CompressorBaseline
from systems.baselines.forum_tfidf import EpisodeTfidf
from systems.baselines.length_ratio import LengthRatio
from systems.baselines.tfidf import WordTfidf
from tasks.pan.pan23 import Pan23Task

SAMPLE = TESTS.parent / "samples" / "pan23-format-sample"
FIXTURES = TESTS / "fixtures"
SYSTEMS: dict[str, Callable[[], object]] = {
    "cngdist": lambda: CharNgramDistance(grid_step=0.05),
    "tfidf": lambda: WordTfidf(max_ngram=2, grid_step=0.05),
    "length_ratio": lambda: LengthRatio(grid_step=0.05),
    "compressor": lambda: CompressorBaseline(memory=1 << 20, grid_step=0.05),
}
CLASSES = {
    "cngdist": CharNgramDistance,
    "tfidf": WordTfidf,
    "length_ratio": LengthRatio,
    "compressor": CompressorBaseline,
}


@pytest.fixture(scope="module")
def data():
    task = Pan23Task()
    return task.load(SAMPLE, "train"), task.load(SAMPLE, "test")


@pytest.fixture(scope="module")
def saved(data, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each fast system fitted on the sample's train split and saved once (copy before editing)."""
    train, _ = data
    root = tmp_path_factory.mktemp("checkpoints")
    folders = {}
    for name, make in SYSTEMS.items():
        system = make()
        system.fit(train, seed=0)
        system.save(root / name)
        folders[name] = root / name
    return folders


def copy(saved: dict[str, Path], name: str, tmp_path: Path) -> Path:
    folder = tmp_path / name
    shutil.copytree(saved[name], folder)
    return folder


def edit_config(folder: Path, change: Callable[[dict], object]) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    change(config)
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")


def unsealed(config: dict) -> None:
    """A checkpoint as written before checksums: the same, without its record of them."""
    config.pop("checksums", None)


def refused(load: Callable[[], object], file: Path, match: str | None = None) -> str:
    """The one-line HarnessError that `load` raises, naming `file`."""
    with pytest.raises(HarnessError, match=match) as info:
        load()
    message = str(info.value)
    assert "\n" not in message and str(file) in message, message
    return message


def cli_refused(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 2, (result.output, result.exception)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


# -- item 6: a checksum of content and weights ----------------------------------------------------------------------


def test_a_checkpoint_records_checksums_of_its_content_and_weights(saved):
    config = json.loads((saved["cngdist"] / "config.json").read_text(encoding="utf-8"))
    assert set(config["checksums"]) == {"content", "weights.safetensors"}
    assert all(value.startswith("sha256:") for value in config["checksums"].values())
    no_weights = json.loads((saved["length_ratio"] / "config.json").read_text(encoding="utf-8"))
    assert set(no_weights["checksums"]) == {"content"}  # length_ratio has no arrays, so no weights file


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("cngdist", lambda c: c["params"].update(ngram_size=2)),  # the case: answered all 0.0, exit 0
        ("cngdist", lambda c: c["params"].update(max_features=10)),
        ("tfidf", lambda c: c["params"].update(lowercase=False)),
        ("cngdist", lambda c: c["state"].update(band=[0.2, 0.3])),
        ("cngdist", lambda c: c["state"]["vocabulary"].reverse()),
        ("length_ratio", lambda c: c["state"].update(band=[0.4, 0.6])),
        ("compressor", lambda c: c["params"].update(order=3)),
    ],
    ids=["ngram_size", "max_features", "lowercase", "band", "vocabulary", "length_ratio-band", "compressor-order"],
)
def test_an_edited_param_or_state_is_refused(saved, tmp_path: Path, name: str, change):
    folder = copy(saved, name, tmp_path)
    edit_config(folder, change)
    refused(lambda: CLASSES[name].load(folder), folder / "config.json", "edited or corrupted.*refit it")


def test_edited_weights_are_refused(saved, tmp_path: Path):
    folder = copy(saved, "cngdist", tmp_path)
    weights = folder / "weights.safetensors"
    raw = bytearray(weights.read_bytes())
    raw[-1] ^= 0x01  # one bit of the last idf value: still a readable file, other numbers
    weights.write_bytes(bytes(raw))
    refused(lambda: CharNgramDistance.load(folder), weights, "edited or corrupted.*refit it")
    weights.unlink()
    refused(lambda: CharNgramDistance.load(folder), weights, "missing")
    # a weights file beside a checkpoint that was written without one is not silently read
    stray = copy(saved, "length_ratio", tmp_path)
    shutil.copy(saved["cngdist"] / "weights.safetensors", stray / "weights.safetensors")
    refused(lambda: LengthRatio.load(stray), stray / "weights.safetensors", "not written with")


def test_the_cli_refuses_an_edited_checkpoint(saved, tmp_path: Path):
    """The issue's case end to end: before, `predict` wrote 0.0 for every problem and exited 0."""
    folder = copy(saved, "cngdist", tmp_path)
    edit_config(folder, lambda c: c["params"].update(ngram_size=2))
    line = cli_refused(
        "predict", "--system", "cngdist", "--task", "pan23", "--input", str(SAMPLE / "test"),
        "--output", str(tmp_path / "out"), "--checkpoint", str(folder),
    )  # fmt: skip
    assert "edited or corrupted" in line and str(folder / "config.json") in line
    assert not (tmp_path / "out" / "answers.jsonl").exists()


def test_a_checkpoint_without_checksums_still_loads_unchecked(saved, data, tmp_path: Path):
    _, test = data
    folder = copy(saved, "cngdist", tmp_path)
    edit_config(folder, unsealed)
    answers = CharNgramDistance.load(saved["cngdist"]).predict(test.problems)
    assert CharNgramDistance.load(folder).predict(test.problems) == answers
    # saved again, it is sealed
    CharNgramDistance.load(folder).save(tmp_path / "again")
    assert "checksums" in json.loads((tmp_path / "again" / "config.json").read_text(encoding="utf-8"))
    # the committed checkpoints of older code have no checksums and load as before
    legacy = FIXTURES / "forum-tfidf-legacy-checkpoints" / "episode_tfidf"
    assert "checksums" not in json.loads((legacy / "config.json").read_text(encoding="utf-8"))
    assert EpisodeTfidf.load(legacy).params()["max_ngram"] == 2


@pytest.mark.parametrize(
    ("name", "change", "match"),
    [
        ("cngdist", lambda c: c["params"].update(ngram_size=2), "4 characters long.*ngram_range"),
        ("cngdist", lambda c: c["params"].update(max_features=10), "more than max_features"),
        ("tfidf", lambda c: c["params"].update(max_ngram=1), "2 words long.*ngram_range"),
        ("tfidf", lambda c: c["state"]["vocabulary"].__setitem__(0, "Capital"), "lower case"),
        ("tfidf", lambda c: c["state"]["vocabulary"].__setitem__(1, c["state"]["vocabulary"][0]), "twice"),
        ("cngdist", lambda c: c["state"]["vocabulary"].pop(), "idf has shape"),
    ],
    ids=["ngram_size", "max_features", "max_ngram", "lowercase", "duplicate", "idf-shape"],
)
def test_an_unchecked_state_that_does_not_fit_its_params_is_refused(saved, tmp_path: Path, name, change, match):
    """Where no checksum guards it (a checkpoint of older code), the TF-IDF systems check the vocabulary."""
    folder = copy(saved, name, tmp_path)

    def legacy_edit(config: dict) -> None:
        unsealed(config)
        change(config)

    edit_config(folder, legacy_edit)
    refused(lambda: CLASSES[name].load(folder), folder, match)


def test_unchecked_idf_must_be_finite(saved, tmp_path: Path):
    from safetensors.numpy import load_file, save_file

    folder = copy(saved, "cngdist", tmp_path)
    edit_config(folder, unsealed)
    arrays = load_file(str(folder / "weights.safetensors"))
    arrays["idf"][0] = np.nan
    save_file(arrays, str(folder / "weights.safetensors"))
    refused(lambda: CharNgramDistance.load(folder), folder, "idf")


# -- item 8: broken files and bands -----------------------------------------------------------------------------------


def _write(name: str, data: bytes | str) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        path = folder / name
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)

    return write


def _truncate(name: str) -> Callable[[Path], None]:
    def truncate(folder: Path) -> None:
        path = folder / name
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    return truncate


def _config(change: Callable[[dict], object]) -> Callable[[Path], None]:
    return lambda folder: edit_config(folder, change)


BROKEN_CONFIG = [
    pytest.param(_write("config.json", '{"format": 1, "system": '), r"config.json:1: malformed JSON", id="not-json"),
    pytest.param(_write("config.json", b"\xff\xfe{}"), "not UTF-8", id="not-utf8"),
    pytest.param(_write("config.json", "[1, 2]"), "JSON object, not a list", id="a-list"),
    pytest.param(_write("config.json", ""), "malformed JSON", id="empty"),
    pytest.param(_config(lambda c: c.pop("params")), "no 'params'", id="no-params"),
    pytest.param(_config(lambda c: c.pop("state")), "no 'state'", id="no-state"),
    pytest.param(_config(lambda c: c.update(params=[1])), "'params' must be a JSON object", id="params-a-list"),
    pytest.param(_config(lambda c: c.update(checksums="x")), "checksums", id="checksums-not-an-object"),
]


@pytest.mark.parametrize(("damage", "match"), BROKEN_CONFIG)
@pytest.mark.parametrize("name", ["cngdist", "length_ratio"])
def test_a_broken_config_is_one_line_naming_it(saved, tmp_path: Path, name, damage, match):
    folder = copy(saved, name, tmp_path)
    damage(folder)
    refused(lambda: CLASSES[name].load(folder), folder / "config.json", match)


BROKEN_WEIGHTS = [
    pytest.param(_truncate("weights.safetensors"), id="truncated"),
    pytest.param(_write("weights.safetensors", bytes(range(256)) * 4), id="garbage"),
    pytest.param(_write("weights.safetensors", b""), id="empty"),
    pytest.param(_write("weights.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00{not json here!}"), id="bad-header"),
]


@pytest.mark.parametrize("damage", BROKEN_WEIGHTS)
@pytest.mark.parametrize("sealed", [True, False], ids=["checked", "unchecked"])
@pytest.mark.parametrize("name", ["cngdist", "compressor"])
def test_broken_weights_are_one_line_naming_them(saved, tmp_path: Path, name, sealed, damage):
    folder = copy(saved, name, tmp_path)
    if not sealed:
        edit_config(folder, unsealed)
    damage(folder)
    refused(lambda: CLASSES[name].load(folder), folder / "weights.safetensors")


BAD_BANDS = [
    pytest.param([0.7, 0.3], id="inverted"),
    pytest.param([float("nan"), 0.5], id="nan"),
    pytest.param([0.2, 1.5], id="above-1"),
    pytest.param([0.5], id="one-value"),
    pytest.param("0.5", id="a-string"),
]


@pytest.mark.parametrize("band", BAD_BANDS)
@pytest.mark.parametrize("name", ["cngdist", "length_ratio", "compressor"])
def test_a_bad_abstain_band_is_one_line_naming_the_config(saved, tmp_path: Path, name, band):
    """Unchecked (a checkpoint of older code), a bad band is refused when loaded, not a ValueError at predict."""
    folder = copy(saved, name, tmp_path)

    def bad_band(config: dict) -> None:
        unsealed(config)
        config["state"]["band"] = band

    edit_config(folder, bad_band)
    refused(lambda: CLASSES[name].load(folder), folder / "config.json", "abstain band")


def test_the_cli_refuses_broken_checkpoints_in_one_line(saved, tmp_path: Path):
    cases = {
        "list": (_write("config.json", "[]"), "config.json"),
        "truncated": (_truncate("weights.safetensors"), "weights.safetensors"),
        "inverted-band": (_config(lambda c: (unsealed(c), c["state"].update(band=[0.9, 0.1]))), "config.json"),
    }
    for case, (damage, file) in cases.items():
        folder = copy(saved, "cngdist", tmp_path / case)
        damage(folder)
        line = cli_refused(
            "predict", "--system", "cngdist", "--task", "pan23", "--input", str(SAMPLE / "test"),
            "--output", str(tmp_path / case / "out"), "--checkpoint", str(folder),
        )  # fmt: skip
        assert str(folder / file) in line, line


# -- item 7: paths and devices are not taken from a checkpoint ---------------------------------------------------------


def test_siamese_load_takes_no_path_or_device_from_the_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The committed siamese checkpoint (older code, so unchecked) pointed at a cache somewhere else."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from systems.siamese_bilstm.system import SiameseBiLSTM

    legacy = FIXTURES / "siamese-legacy-checkpoint"
    folder = tmp_path / "checkpoint"
    shutil.copytree(legacy / "checkpoint", folder)
    elsewhere = tmp_path / "elsewhere" / "cache"
    edit_config(folder, lambda c: c["params"].update(encoder=str(legacy / "encoder"), cache_dir=str(elsewhere)))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "runtime-cache"))
    rows = json.loads((legacy / "problems.json").read_text(encoding="utf-8"))[:4]
    problems = [VerificationProblem(r["id"], tuple(r["texts"]), tuple(r["discourse_types"])) for r in rows]

    system = SiameseBiLSTM.load(folder)
    assert (system.cache_dir, system.device, system.mixed_precision) == (None, "auto", True)  # run-time defaults
    answers = [a.value for a in system.predict(problems)]
    assert answers == pytest.approx([r["answer"] for r in rows], abs=1e-12, rel=0)
    assert not (tmp_path / "elsewhere").exists()
    assert any((tmp_path / "runtime-cache").rglob("*"))  # the run-time default ($HARNESS_CACHE_DIR)

    chosen = tmp_path / "chosen"
    given = SiameseBiLSTM.load(folder, runtime={"cache_dir": str(chosen), "device": "cpu"})
    assert (given.cache_dir, given.device) == (str(chosen), "cpu")
    assert [a.value for a in given.predict(problems)] == pytest.approx(answers, abs=1e-12, rel=0)
    assert any(chosen.rglob("*")) and not (tmp_path / "elsewhere").exists()
    with pytest.raises(HarnessError, match="not a run-time setting"):
        SiameseBiLSTM.load(folder, runtime={"head.hidden_size": 8})


def test_forum_encoder_load_takes_no_path_or_device_from_the_checkpoint(tmp_path: Path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from helpers.reddit_data import synthetic_train_data
    from helpers.tiny_encoder import make_tiny_encoder

    from harness.params import build
    from systems.forum_encoder.system import RedditEncoder

    tiny = str(make_tiny_encoder(tmp_path / "encoder"))
    train = synthetic_train_data(n_authors=6, per_author=8)
    samples = [stream.actions[:3] for stream in train.streams]
    fit_cache = tmp_path / "fit-cache"
    system = build(
        RedditEncoder,
        {"encoder.model": tiny, "device": "cpu", "cache_dir": str(fit_cache), "cpu_threads": 1, "training.epochs": 1},
    )
    system.fit(train, seed=0)
    embeddings = system.embed(samples)
    system.save(tmp_path / "checkpoint")
    config = json.loads((tmp_path / "checkpoint" / "config.json").read_text(encoding="utf-8"))
    assert config["params"]["cache_dir"] == str(fit_cache)  # recorded, for provenance only
    shutil.rmtree(fit_cache)

    loaded = RedditEncoder.load(tmp_path / "checkpoint")
    assert (loaded.cache_dir, loaded.device, loaded.cpu_threads) == (None, "auto", None)
    assert np.allclose(loaded.embed(samples), embeddings, atol=1e-6)
    assert not fit_cache.exists()
    chosen = tmp_path / "chosen"
    given = RedditEncoder.load(tmp_path / "checkpoint", runtime={"cache_dir": str(chosen), "device": "cpu"})
    assert np.allclose(given.embed(samples), embeddings, atol=1e-6)
    assert any(chosen.rglob("*.npy")) and not fit_cache.exists()


def test_a_resumed_run_keeps_its_own_run_time_settings(saved, tmp_path: Path):
    """`load_like` (for a run resuming from its checkpoint) loads with the settings that run was given."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from harness.params import build
    from harness.runtime import load_like
    from systems.siamese_bilstm.system import SiameseBiLSTM

    legacy = FIXTURES / "siamese-legacy-checkpoint"
    folder = tmp_path / "checkpoint"
    shutil.copytree(legacy / "checkpoint", folder)
    edit_config(folder, lambda c: c["params"].update(encoder=str(legacy / "encoder"), cache_dir="/elsewhere"))
    given = build(SiameseBiLSTM, {"encoder.model": str(legacy / "encoder"), "device": "cpu", "cache_dir": "here"})
    loaded = load_like(given, folder)
    assert (loaded.device, loaded.cache_dir, loaded.head.hidden_size) == ("cpu", "here", 4)  # the rest: checkpoint's
    baseline = load_like(CharNgramDistance(), saved["cngdist"])  # a system without run-time settings
    assert baseline.params() == CharNgramDistance.load(saved["cngdist"]).params()
