"""A fault suite: the harness used as a hostile but realistic user would (issue 28, "a fault suite of your own").

Every case is the `harness` command line in a fresh process (`python -m harness.cli ...`, offline), on the PAN 2023
format sample, a small PAN 2013-2015 corpus, a JSONL corpus, and two runs fitted once for the module (length_ratio
and cngdist). A case either succeeds (exit 0, with the output a user should get) or is refused: exit code 2, exactly
one line on stderr starting "error: " and naming the file (with its line and field where there is one), nothing on
stdout. No case may print a traceback, and the user's inputs and earlier results stay byte-identical.

The cases are new beside tests/harness/test_input_faults.py, test_cli_inputs.py and test_cli_walk.py (which walk
missing, empty and truncated inputs of every command): malformed and re-encoded files, wrong and duplicate ids,
answers out of range, tampered checkpoints and result files, kill -9 mid-command and a rerun, concurrent runs into
one folder, full and read-only file systems (where this machine lets a test mount a tmpfs), and names carrying
HTML, Markdown, LaTeX or CSV injection. A case of a defect issue 28 names that is still being fixed elsewhere is
`xfail(strict=True)` with its item (`known`), so it flips when the fix lands; a defect this suite found in a file
others are editing is `xfail(strict=True)` with a one-line reason (`new_defect`).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.paths import SAMPLE
from test_input_faults import classic_corpus

from tasks.pan.evaluator import PAN_OUT_NAMES

TIMEOUT = 120


def env() -> dict[str, str]:
    """The environment of every command: offline, one thread, this session's cache (conftest sets it at start)."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "HARNESS_PROGRESS_INTERVAL": "3600"}


def known(item: int, what: str) -> pytest.MarkDecorator:
    """A case of a defect issue 28 names, being fixed elsewhere: it flips to a pass when the fix lands."""
    return pytest.mark.xfail(strict=True, reason=f"issue 28 item {item}: {what}: being fixed")


def new_defect(reason: str) -> pytest.MarkDecorator:
    """A defect this suite found that lies in a file others are editing: left for them, in one line."""
    return pytest.mark.xfail(strict=True, reason=f"new defect, not fixed here: {reason}")


# -- running the command line ------------------------------------------------------------------------------------


def cli(*args: object, cwd: Path | None = None, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """`harness ARGS` as a user runs it: a fresh process, stdout and stderr apart."""
    command = [sys.executable, "-m", "harness.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=env(), cwd=cwd, timeout=timeout, check=False)


def ok(done: subprocess.CompletedProcess) -> str:
    """The stdout of a command that worked: exit code 0, no traceback anywhere."""
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done.stdout


# what a command logs while it works (before a refusal that comes after loading): steps and their times, notes
LOG_LINES = re.compile(
    r"\w+ took [\d.]+s|.* is a format sample the project wrote, .*|resuming from the fitted checkpoint .*"
    r"|.+: \d+/\d+ .+, took \d.*"  # a progress line (no terminal): counts, rate, time
)


def refused(done: subprocess.CompletedProcess, *names: object, after_work: bool = False) -> str:
    """The one line of a refusal (exit code 2, nothing on stdout, no traceback), checked to name each of `names`.

    `after_work`: the refusal comes once the command has loaded its data, whose log lines (LOG_LINES) come first.
    """
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-3000:]
    assert done.returncode == 2, output[-3000:]
    lines = done.stderr.strip().splitlines()
    if after_work:
        assert all(LOG_LINES.fullmatch(line) for line in lines[:-1]), done.stderr
        lines = lines[-1:]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert not done.stdout.strip(), done.stdout
    for name in names:
        assert str(name) in lines[0], (str(name), lines[0])
    return lines[0]


def tree(*roots: Path) -> dict[str, bytes | None]:
    """Every path under the roots with its bytes (None for a folder or a link): to show that nothing changed."""
    found: dict[str, bytes | None] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.name.endswith(".lock"):  # a lock file is made once by the first run of a folder and left
                continue
            regular = path.is_file() and not path.is_symlink()
            found[str(path)] = path.read_bytes() if regular else None
    return found


# -- inputs -----------------------------------------------------------------------------------------------------


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_rows(path: Path, items: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def edit_line(path: Path, number: int, text: str) -> Path:
    """Replace line `number` (1-based) of a text file by `text`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def deep_json(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


def jsonl_corpus(path: Path, authors: int = 8, per_type: int = 3) -> Path:
    """A `pairs --from jsonl` input: `authors` authors with `per_type` texts of two discourse types each."""
    items = [
        {"author": f"a{a}", "text": f"text {i} of a{a} as {kind}, written with some care", "discourse_type": kind}
        for a in range(authors)
        for kind in ("email", "essay")
        for i in range(per_type)
    ]
    return write_rows(path, items)


@dataclass
class World:
    """What every case may read, never write: data, two fitted runs and their answers, made once for the module."""

    root: Path
    data: Path  # a copy of the PAN 2023 format sample
    runs: Path
    lr: Path  # length_ratio's run folder
    cng: Path  # cngdist's run folder
    corpus: Path  # a PAN 2013-2015 corpus folder
    texts: Path  # a JSONL corpus for `harness pairs`

    @property
    def truth(self) -> Path:
        return self.data / "test" / "truth.jsonl"

    @property
    def answers(self) -> Path:
        return self.cng / "answers.jsonl"

    def data_copy(self, tmp: Path, name: str = "data") -> Path:
        return shutil.copytree(self.data, tmp / name)

    def run_copy(self, tmp: Path, system: str = "cng") -> Path:
        """A copy of the whole runs folder; the copied run folder of `system` (lr or cng)."""
        out = shutil.copytree(self.runs, tmp / "runs")
        return out / getattr(self, system).relative_to(self.runs)

    def checkpoint_copy(self, tmp: Path, system: str = "cng") -> Path:
        return shutil.copytree(getattr(self, system) / "checkpoint", tmp / "checkpoint")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("fault-world")
    data = shutil.copytree(SAMPLE, root / "sample")
    runs = root / "runs"
    for system in ("length_ratio", "cngdist"):
        ok(cli("run", "--system", system, "--task", "pan23", "--data", data, "--out", runs))
    corpus = classic_corpus(root / "corpus")
    texts = jsonl_corpus(root / "texts.jsonl")
    folder = runs / "pan23" / "sample"
    return World(root, data, runs, folder / "length_ratio" / "seed-0", folder / "cngdist" / "seed-0", corpus, texts)


@pytest.fixture(scope="module")
def reference_scores(world: World) -> str:
    """What `harness score` prints for cngdist's answers on the sample: what every re-encoding must give too."""
    return ok(cli("score", "--task", "pan23", "--truth", world.truth, "--answers", world.answers))


# -- refusals: one line naming the file (line, field), nothing written -------------------------------------------


@dataclass
class Refusal:
    """A call that must be refused, and what its one line must name."""

    args: list[object]
    names: list[object] = field(default_factory=list)
    not_names: list[str] = field(default_factory=list)  # words the line must not hold (a wrong diagnosis)
    after_work: bool = False  # refused once the data is loaded: the log lines of the loading come first
    cwd: Path | None = None  # the folder the command runs in (the repository's where None)


REFUSALS: list = []


def refusal(case_id: str, *marks: pytest.MarkDecorator) -> Callable:
    def register(make: Callable[[World, Path], Refusal]) -> Callable[[World, Path], Refusal]:
        REFUSALS.append(pytest.param(make, id=case_id, marks=marks))
        return make

    return register


def run_args(data: Path, out: Path, system: str = "length_ratio", *extra: object) -> list[object]:
    return ["run", "--system", system, "--task", "pan23", "--data", data, "--out", out, *extra]


def broken_split(tmp: Path, w: World, split: str, name: str, damage: Callable[[Path], object]) -> Refusal:
    """`harness run` on a copy of the sample whose `<split>/<name>` was damaged; the line names that file."""
    data = w.data_copy(tmp)
    path = data / split / name
    damage(path)
    return Refusal(run_args(data, tmp / "out"), [path])


# run: malformed data files


@refusal("run:pairs-utf16")
def _(w: World, t: Path) -> Refusal:
    case = broken_split(t, w, "train", "pairs.jsonl", lambda p: p.write_bytes(p.read_text("utf-8").encode("utf-16")))
    case.names = [f"{case.names[0]}:1", "UTF-8"]
    return case


@refusal("run:pairs-nul-byte-inside-a-string")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        data = path.read_bytes().split(b"\n")
        data[2] = data[2].replace(b"the", b"t\x00he", 1)
        path.write_bytes(b"\n".join(data))

    case = broken_split(t, w, "test", "pairs.jsonl", damage)
    case.names = [f"{case.names[0]}:3", "malformed JSON"]
    return case


@refusal("run:pairs-latin1-byte")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        data = path.read_bytes().split(b"\n")
        data[4] = data[4].replace(b"a", b"caf\xe9", 1)
        path.write_bytes(b"\n".join(data))

    case = broken_split(t, w, "train", "pairs.jsonl", damage)
    case.names = [f"{case.names[0]}:5", "UTF-8"]
    return case


@refusal("run:pairs-three-texts")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        items = rows(path)
        items[1]["pair"].append("a third text")
        write_rows(path, items)

    case = broken_split(t, w, "test", "pairs.jsonl", damage)
    case.names = [f"{case.names[0]}:2", "field 'pair'"]
    return case


@refusal("run:pairs-text-is-a-number")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        items = rows(path)
        items[3]["pair"][1] = 42
        write_rows(path, items)

    case = broken_split(t, w, "test", "pairs.jsonl", damage)
    case.names = [f"{case.names[0]}:4", "field 'pair[1]'"]
    return case


@refusal("run:pairs-duplicate-id")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        items = rows(path)
        items[4]["id"] = items[0]["id"]
        write_rows(path, items)

    case = broken_split(t, w, "test", "pairs.jsonl", damage)
    case.names = [f"{case.names[0]}:5", "field 'id'", "line 1"]
    return case


@refusal("run:pairs-line-is-an-array")
def _(w: World, t: Path) -> Refusal:
    case = broken_split(t, w, "train", "pairs.jsonl", lambda p: edit_line(p, 2, '["test-01", ["a", "b"]]'))
    case.names = [f"{case.names[0]}:2", "JSON object"]
    return case


@refusal("run:pairs-one-discourse-type")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        items = rows(path)
        items[5]["discourse_types"] = ["essay"]
        write_rows(path, items)

    case = broken_split(t, w, "test", "pairs.jsonl", damage)
    case.names = [f"{case.names[0]}:6", "field 'discourse_types'"]
    return case


@refusal("run:pairs-blank-lines-only")
def _(w: World, t: Path) -> Refusal:
    case = broken_split(t, w, "train", "pairs.jsonl", lambda p: p.write_text("\n  \n\t\n", encoding="utf-8"))
    case.names += ["empty"]
    return case


@refusal("run:truth-same-as-a-string")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        items = rows(path)
        items[2]["same"] = "true"
        write_rows(path, items)

    case = broken_split(t, w, "test", "truth.jsonl", damage)
    case.names = [f"{case.names[0]}:3", "field 'same'"]
    return case


@refusal("run:truth-authors-contradict-same")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        items = rows(path)
        items[1]["authors"] = ["someone", "someone"]  # line 2 is a different-author pair
        assert items[1]["same"] is False
        write_rows(path, items)

    case = broken_split(t, w, "test", "truth.jsonl", damage)
    case.names = [f"{case.names[0]}:2", "field 'authors'"]
    return case


@refusal("run:truth-for-an-unknown-problem")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        write_rows(path, [*rows(path), {"id": "not-a-problem", "same": True}])

    case = broken_split(t, w, "test", "truth.jsonl", damage)
    case.names = [f"{case.names[0]}:9", "'not-a-problem'"]
    return case


@refusal("run:truth-missing-a-problem")
def _(w: World, t: Path) -> Refusal:
    def damage(path: Path) -> None:
        write_rows(path, rows(path)[:-1])

    case = broken_split(t, w, "test", "truth.jsonl", damage)
    case.names += ["'test-08'"]
    return case


@refusal("run:truth-gz-truncated")
def _(w: World, t: Path) -> Refusal:
    data = w.data_copy(t)
    plain = data / "test" / "truth.jsonl"
    packed = gzip.compress(plain.read_bytes())
    plain.unlink()
    (data / "test" / "truth.jsonl.gz").write_bytes(packed[: len(packed) // 2])
    return Refusal(run_args(data, t / "out"), [data / "test" / "truth.jsonl.gz", "the compressed file is cut short"])


@refusal("run:truth-gz-damaged")
def _(w: World, t: Path) -> Refusal:
    """A valid gzip header, then a deflate block of the reserved type: was a zlib.error traceback (audit 4, F1)."""
    data = w.data_copy(t)
    plain = data / "test" / "truth.jsonl"
    packed = bytearray(gzip.compress(plain.read_bytes()))
    packed[10] = 0xFF  # the first block's header, just after gzip's 10-byte header: block type 3 does not exist
    plain.unlink()
    (data / "test" / "truth.jsonl.gz").write_bytes(bytes(packed))
    return Refusal(run_args(data, t / "out"), [data / "test" / "truth.jsonl.gz", "damaged compressed data"])


@refusal("run:pairs-gz-not-gzip")
def _(w: World, t: Path) -> Refusal:
    data = w.data_copy(t)
    (data / "train" / "pairs.jsonl").rename(data / "train" / "pairs.jsonl.gz")  # plain text under a .gz name
    return Refusal(run_args(data, t / "out"), [data / "train" / "pairs.jsonl.gz"])


@refusal("run:split-is-a-symlink-loop")
def _(w: World, t: Path) -> Refusal:
    data = w.data_copy(t)
    shutil.rmtree(data / "train")
    (data / "train").symlink_to(data / "train")
    return Refusal(run_args(data, t / "out"), [data / "train"], not_names=["missing", "not found"])


@refusal("run:pairs-jsonl-is-a-folder")
def _(w: World, t: Path) -> Refusal:
    data = w.data_copy(t)
    (data / "test" / "pairs.jsonl").unlink()
    (data / "test" / "pairs.jsonl").mkdir()
    return Refusal(run_args(data, t / "out"), [data / "test" / "pairs.jsonl"], not_names=["expected pairs.jsonl"])


@refusal("run:pairs-jsonl-is-dev-null")
def _(w: World, t: Path) -> Refusal:
    data = w.data_copy(t)
    (data / "test" / "pairs.jsonl").unlink()
    (data / "test" / "pairs.jsonl").symlink_to("/dev/null")
    return Refusal(run_args(data, t / "out"), [data / "test" / "pairs.jsonl"], not_names=["expected pairs.jsonl"])


# run: what a user types


@refusal("run:param-with-an-empty-value")
def _(w: World, t: Path) -> Refusal:
    return Refusal(run_args(w.data, t / "out", "cngdist", "--param", "ngram_size="), ["ngram_size", "''"])


@refusal("run:param-repeated")
def _(w: World, t: Path) -> Refusal:
    # the --out is a file, so today's code (which takes the last value) stops there at once instead of fitting
    (t / "taken").write_text("a file\n", encoding="utf-8")
    args = run_args(w.data, t / "taken", "cngdist", "--param", "ngram_size=3", "--param", "ngram_size=5")
    return Refusal(args, ["ngram_size"], not_names=["is a file"])


@refusal("run:out-is-a-dangling-symlink")
def _(w: World, t: Path) -> Refusal:
    (t / "out").symlink_to(t / "nowhere")
    return Refusal(run_args(w.data, t / "out"), [t / "out"])


# run: an earlier result or checkpoint tampered with


@refusal("run:rerun-onto-a-truncated-result-json")
def _(w: World, t: Path) -> Refusal:
    run_dir = w.run_copy(t, "lr")
    result = run_dir / "result.json"
    result.write_bytes(result.read_bytes()[:300])
    return Refusal(run_args(w.data, t / "runs"), [result], after_work=True)


@refusal("run:rerun-onto-a-result-json-that-is-a-list")
def _(w: World, t: Path) -> Refusal:
    run_dir = w.run_copy(t, "lr")
    (run_dir / "result.json").write_text("[1, 2, 3]\n", encoding="utf-8")
    return Refusal(run_args(w.data, t / "runs"), [run_dir / "result.json"], after_work=True)


@refusal("run:rerun-onto-a-result-json-with-a-text-schema-version")
def _(w: World, t: Path) -> Refusal:
    run_dir = w.run_copy(t, "lr")
    result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    result["schema_version"] = "1"
    (run_dir / "result.json").write_text(json.dumps(result), encoding="utf-8")
    return Refusal(run_args(w.data, t / "runs"), [run_dir / "result.json", "schema_version"], after_work=True)


@refusal("run:rerun-onto-a-deeply-nested-result-json")
def _(w: World, t: Path) -> Refusal:
    run_dir = w.run_copy(t, "lr")
    (run_dir / "result.json").write_text('{"schema_version": 1, "scores": ' + deep_json() + "}", encoding="utf-8")
    return Refusal(run_args(w.data, t / "runs"), [run_dir / "result.json"], after_work=True)


def crashed_copy(w: World, t: Path) -> Path:
    """A copy of cngdist's run as a crash after fitting leaves it: checkpoint and fingerprint, no result."""
    run_dir = w.run_copy(t, "cng")
    for name in ("result.json", "details.jsonl", "answers.jsonl"):
        (run_dir / name).unlink()
    return run_dir


@refusal("run:resume-from-a-checkpoint-with-an-edited-config")
def _(w: World, t: Path) -> Refusal:
    run_dir = crashed_copy(w, t)
    config = run_dir / "checkpoint" / "config.json"
    config.write_text(config.read_text(encoding="utf-8").replace('"max_features": 3000', '"max_features": 2999'))
    return Refusal(run_args(w.data, t / "runs", "cngdist"), [config], after_work=True)


@refusal("run:resume-from-a-checkpoint-with-a-flipped-weights-byte")
def _(w: World, t: Path) -> Refusal:
    run_dir = crashed_copy(w, t)
    weights = run_dir / "checkpoint" / "weights.safetensors"
    flip_last_byte(weights)
    return Refusal(run_args(w.data, t / "runs", "cngdist"), [weights], after_work=True)


def flip_last_byte(path: Path) -> None:
    """Flip one bit of the last byte: inside the tensor data, the header and the size untouched."""
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))


# predict: tampered or wrong checkpoints, bad input


def predict_args(w: World, t: Path, checkpoint: Path, system: str = "cngdist", input_dir: Path | None = None):
    return [
        *("predict", "--system", system, "--task", "pan23", "--input", input_dir or w.data / "test"),
        *("--output", t / "out", "--checkpoint", checkpoint),
    ]


@refusal("predict:weights-with-one-flipped-bit")
def _(w: World, t: Path) -> Refusal:
    checkpoint = w.checkpoint_copy(t)
    flip_last_byte(checkpoint / "weights.safetensors")
    return Refusal(predict_args(w, t, checkpoint), [checkpoint / "weights.safetensors"])


@refusal("predict:config-names-another-system")
def _(w: World, t: Path) -> Refusal:
    checkpoint = w.checkpoint_copy(t)
    config = checkpoint / "config.json"
    config.write_text(config.read_text(encoding="utf-8").replace('"system": "cngdist"', '"system": "length_ratio"'))
    return Refusal(predict_args(w, t, checkpoint), [config])


@refusal("predict:checkpoint-of-another-system")
def _(w: World, t: Path) -> Refusal:
    checkpoint = w.checkpoint_copy(t, "lr")
    return Refusal(predict_args(w, t, checkpoint, "cngdist"), [checkpoint, "length_ratio"])


@refusal("predict:checkpoint-is-the-run-folder")
def _(w: World, t: Path) -> Refusal:
    run_dir = w.run_copy(t, "cng")
    return Refusal(predict_args(w, t, run_dir), [run_dir])


@refusal("predict:checkpoint-is-a-file")
def _(w: World, t: Path) -> Refusal:
    return Refusal(predict_args(w, t, w.cng / "result.json"), [w.cng / "result.json"])


@refusal("predict:checkpoint-without-weights")
def _(w: World, t: Path) -> Refusal:
    checkpoint = w.checkpoint_copy(t)
    (checkpoint / "weights.safetensors").unlink()
    return Refusal(predict_args(w, t, checkpoint), [checkpoint / "weights.safetensors"])


@refusal("predict:config-nested-100000-deep")
def _(w: World, t: Path) -> Refusal:
    checkpoint = w.checkpoint_copy(t)
    (checkpoint / "config.json").write_text(deep_json(), encoding="utf-8")
    return Refusal(predict_args(w, t, checkpoint), [checkpoint / "config.json"])


@refusal("predict:input-with-duplicate-ids")
def _(w: World, t: Path) -> Refusal:
    items = rows(w.data / "test" / "pairs.jsonl")
    items[6]["id"] = items[2]["id"]
    pairs = write_rows(t / "input" / "pairs.jsonl", items)
    return Refusal(predict_args(w, t, w.cng / "checkpoint", input_dir=t / "input"), [f"{pairs}:7", "field 'id'"])


@refusal("predict:input-with-truth-but-no-pairs")
def _(w: World, t: Path) -> Refusal:
    shutil.copytree(w.data / "test", t / "input")
    (t / "input" / "pairs.jsonl").unlink()
    return Refusal(predict_args(w, t, w.cng / "checkpoint", input_dir=t / "input"), [t / "input", "pairs.jsonl"])


@refusal("predict:input-deeply-nested-line")
def _(w: World, t: Path) -> Refusal:
    pairs = t / "input" / "pairs.jsonl"
    shutil.copytree(w.data / "test", t / "input")
    pairs.write_text(pairs.read_text(encoding="utf-8") + deep_json() + "\n", encoding="utf-8")
    return Refusal(predict_args(w, t, w.cng / "checkpoint", input_dir=t / "input"), [f"{pairs}:9"])


# score: answers and truth a user might hand in


def answers_file(t: Path, lines: list[str], name: str = "answers.jsonl") -> Path:
    path = t / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def score_args(w: World, answers: Path, *extra: object, truth: Path | None = None) -> list[object]:
    return ["score", "--task", "pan23", "--truth", truth or w.truth, "--answers", answers, *extra]


def bad_value(value: str, line: int = 2) -> Callable[[World, Path], Refusal]:
    def make(w: World, t: Path) -> Refusal:
        lines = [json.dumps({"id": f"test-0{i}", "value": 0.25}) for i in range(1, 9)]
        lines[line - 1] = f'{{"id": "test-0{line}", "value": {value}}}'
        answers = answers_file(t, lines)
        return Refusal(score_args(w, answers), [f"{answers}:{line}", "field 'value'"])

    return make


for _value, _id in [("true", "bool"), ("[0.2, 0.3]", "list-of-two"), ("1e400", "overflows-to-inf"),
                    ("null", "null"), ('"0.7"', "text"), ("-1e-3", "below-zero"), ("{}", "object")]:  # fmt: skip
    REFUSALS.append(pytest.param(bad_value(_value), id=f"score:answer-value-{_id}"))


@refusal("score:the-truth-file-given-as-answers")
def _(w: World, t: Path) -> Refusal:
    return Refusal(score_args(w, w.truth), [f"{w.truth}:1", "field 'value'"])


@refusal("score:the-pairs-file-given-as-truth")
def _(w: World, t: Path) -> Refusal:
    pairs = w.data / "test" / "pairs.jsonl"
    return Refusal(score_args(w, w.answers, truth=pairs), [f"{pairs}:1", "field 'same'"])


@refusal("score:answer-id-with-a-trailing-space")
def _(w: World, t: Path) -> Refusal:
    answers = answers_file(t, ['{"id": "test-01 ", "value": 0.9}', '{"id": "test-02", "value": 0.1}'])
    return Refusal(score_args(w, answers), [answers, "'test-01 '"])


@refusal("score:duplicate-answer-with-the-same-value")
def _(w: World, t: Path) -> Refusal:
    answers = answers_file(t, ['{"id": "test-01", "value": 0.9}', '{"id": "test-01", "value": 0.9}'])
    return Refusal(score_args(w, answers), [f"{answers}:2", "field 'id'"])


@refusal("score:answers-utf16")
def _(w: World, t: Path) -> Refusal:
    answers = t / "answers.jsonl"
    answers.write_bytes(w.answers.read_text(encoding="utf-8").encode("utf-16"))
    return Refusal(score_args(w, answers), [f"{answers}:1", "UTF-8"])


@refusal("score:answers-gz-truncated")
def _(w: World, t: Path) -> Refusal:
    answers = t / "answers.jsonl.gz"
    packed = gzip.compress(w.answers.read_bytes())
    answers.write_bytes(packed[: len(packed) // 2])
    return Refusal(score_args(w, answers), [answers])


@refusal("score:answers-gz-junk-after-the-stream")
def _(w: World, t: Path) -> Refusal:
    """Was "Not a gzipped file (b'ga')" for a file whose gzip stream is whole (audit 4, F10)."""
    answers = t / "answers.jsonl.gz"
    answers.write_bytes(gzip.compress(w.answers.read_bytes()) + b"garbage")
    return Refusal(score_args(w, answers), [answers, "bytes after the end of the gzip stream"])


@refusal("score:answers-deeply-nested-line")
def _(w: World, t: Path) -> Refusal:
    answers = answers_file(t, ['{"id": "test-01", "value": 0.9}', deep_json()])
    return Refusal(score_args(w, answers), [f"{answers}:2"])


@refusal("score:truth-with-a-duplicate-id")
def _(w: World, t: Path) -> Refusal:
    items = rows(w.truth)
    truth = write_rows(t / "truth.jsonl", [*items, items[3]])
    return Refusal(score_args(w, w.answers, truth=truth), [f"{truth}:9", "field 'id'"])


@refusal("score:truth-folder-without-truth")
def _(w: World, t: Path) -> Refusal:
    shutil.copytree(w.data / "test", t / "test")
    (t / "test" / "truth.jsonl").unlink()
    return Refusal(score_args(w, w.answers, truth=t / "test"), [t / "test", "truth.jsonl"])


@refusal("score:record-onto-an-earlier-record")
def _(w: World, t: Path) -> Refusal:
    record = t / "record"
    ok(cli(*score_args(w, w.answers, "--record", record)))
    return Refusal(score_args(w, w.lr / "answers.jsonl", "--record", record), [record / "result.json", "--overwrite"])


# convert: PAN 2013-2015 corpora with a fault


def broken_corpus(w: World, t: Path, damage: Callable[[Path], object], *names: object) -> Refusal:
    corpus = shutil.copytree(w.corpus, t / "corpus")
    damage(corpus)
    return Refusal(["convert", corpus, t / "out"], [name if isinstance(name, str) else corpus / name for name in names])


@refusal("convert:problem-without-unknown")
def _(w: World, t: Path) -> Refusal:
    return broken_corpus(w, t, lambda c: (c / "P02" / "unknown.txt").unlink(), Path("P02"), "unknown.txt")


@refusal("convert:problem-without-known-texts")
def _(w: World, t: Path) -> Refusal:
    return broken_corpus(w, t, lambda c: (c / "P01" / "known01.txt").unlink(), Path("P01"), "known")


@refusal("convert:two-known-texts-with-one-number")
def _(w: World, t: Path) -> Refusal:
    return broken_corpus(w, t, lambda c: (c / "P01" / "known1.txt").write_text("more\n"), Path("P01"))


@refusal("convert:empty-unknown-text")
def _(w: World, t: Path) -> Refusal:
    return broken_corpus(w, t, lambda c: (c / "P02" / "unknown.txt").write_text(" \n"), Path("P02/unknown.txt"))


@refusal("convert:unknown-text-utf16")
def _(w: World, t: Path) -> Refusal:
    def damage(corpus: Path) -> None:
        (corpus / "P01" / "unknown.txt").write_bytes("the unknown text\n".encode("utf-16"))

    return broken_corpus(w, t, damage, Path("P01/unknown.txt"), "UTF-8")


@refusal("convert:truth-names-a-problem-without-a-folder")
def _(w: World, t: Path) -> Refusal:
    return broken_corpus(w, t, lambda c: (c / "truth.txt").write_text("P01 Y\nP02 N\nP03 Y\n"), "truth.txt:3")


@refusal("convert:truth-answer-not-y-or-n")
def _(w: World, t: Path) -> Refusal:
    return broken_corpus(w, t, lambda c: (c / "truth.txt").write_text("P01 Y\nP02 maybe\n"), "truth.txt:2")


@refusal("convert:truth-with-a-duplicate-id")
def _(w: World, t: Path) -> Refusal:
    return broken_corpus(w, t, lambda c: (c / "truth.txt").write_text("P01 Y\nP02 N\nP01 N\n"), "truth.txt:3")


@refusal("convert:contents-json-malformed")
def _(w: World, t: Path) -> Refusal:
    return broken_corpus(w, t, lambda c: (c / "contents.json").write_text('{"language": "English", '), "contents.json")


# pairs: a JSONL corpus with a fault


def pairs_args(source: Path, out: Path, *extra: object) -> list[object]:
    return ["pairs", "--from", "jsonl", source, out, "--pairs", "8", *extra]


@refusal("pairs:jsonl-utf16")
def _(w: World, t: Path) -> Refusal:
    source = t / "texts.jsonl"
    source.write_bytes(w.texts.read_text(encoding="utf-8").encode("utf-16"))
    return Refusal(pairs_args(source, t / "out"), [f"{source}:1", "UTF-8"])


@refusal("pairs:jsonl-gzip-under-a-plain-name")
def _(w: World, t: Path) -> Refusal:
    source = t / "texts.jsonl"
    source.write_bytes(gzip.compress(w.texts.read_bytes()))
    return Refusal(pairs_args(source, t / "out"), [source, "gzipped"])


@refusal("pairs:jsonl-author-a-lone-surrogate")
def _(w: World, t: Path) -> Refusal:
    items = rows(w.texts)
    items[3]["author"] = "a\udc80"
    source = write_rows(t / "texts.jsonl", items)
    return Refusal(pairs_args(source, t / "out"), [f"{source}:4", "field 'author'"])


@refusal("pairs:jsonl-deeply-nested-line")
def _(w: World, t: Path) -> Refusal:
    source = t / "texts.jsonl"
    source.write_text(w.texts.read_text(encoding="utf-8") + deep_json() + "\n", encoding="utf-8")
    return Refusal(pairs_args(source, t / "out"), [f"{source}:49"])


# leaderboard / plot / report: result files and details tampered with


def tampered_result(w: World, t: Path, edit: Callable[[Path], object]) -> Path:
    """A copy of the runs folder with length_ratio's result.json edited; returns that result.json."""
    result = w.run_copy(t, "lr") / "result.json"
    edit(result)
    return result


@refusal("leaderboard:result-json-empty")
def _(w: World, t: Path) -> Refusal:
    result = tampered_result(w, t, lambda p: p.write_bytes(b""))
    return Refusal(["leaderboard", t / "runs"], [result])


@refusal("leaderboard:result-json-latin1")
def _(w: World, t: Path) -> Refusal:
    result = tampered_result(w, t, lambda p: p.write_bytes(p.read_bytes().replace(b'"pan23"', b'"pan\xe923"', 1)))
    return Refusal(["leaderboard", t / "runs"], [result])


@refusal("leaderboard:result-json-newer-schema")
def _(w: World, t: Path) -> Refusal:
    def edit(path: Path) -> None:
        path.write_text(path.read_text(encoding="utf-8").replace('"schema_version": 1', '"schema_version": 99'))

    result = tampered_result(w, t, edit)
    return Refusal(["leaderboard", t / "runs"], [result, "99"])


@refusal("leaderboard:result-json-text-schema-version")
def _(w: World, t: Path) -> Refusal:
    def edit(path: Path) -> None:
        path.write_text(path.read_text(encoding="utf-8").replace('"schema_version": 1', '"schema_version": "1"'))

    result = tampered_result(w, t, edit)
    return Refusal(["leaderboard", t / "runs"], [result, "schema_version"])


@refusal("leaderboard:result-json-scores-a-list")
def _(w: World, t: Path) -> Refusal:
    def edit(path: Path) -> None:
        result = json.loads(path.read_text(encoding="utf-8"))
        result["scores"] = [0.5, 0.7]
        path.write_text(json.dumps(result), encoding="utf-8")

    result = tampered_result(w, t, edit)
    return Refusal(["leaderboard", t / "runs"], [result, "scores"])


@refusal("leaderboard:result-json-is-a-folder")
def _(w: World, t: Path) -> Refusal:
    def edit(path: Path) -> None:
        path.unlink()
        path.mkdir()

    result = tampered_result(w, t, edit)
    return Refusal(["leaderboard", t / "runs"], [result])


@refusal("leaderboard:significance-with-every-detail-set-to-one")
def _(w: World, t: Path) -> Refusal:
    def edit(path: Path) -> None:
        details = path.parent / "details.jsonl"
        write_rows(details, [{**row, "value": 1.0} for row in rows(details)])

    result = tampered_result(w, t, edit)
    return Refusal(
        ["leaderboard", t / "runs", "--significance", "--resamples", "50"], [result.parent / "details.jsonl"]
    )


@refusal("plot:without-details")
def _(w: World, t: Path) -> Refusal:
    result = tampered_result(w, t, lambda p: (p.parent / "details.jsonl").unlink())
    return Refusal(["plot", t / "runs", "--out", t / "figures"], [result.parent / "details.jsonl"])


@refusal("report:a-result-json-deeply-nested")
def _(w: World, t: Path) -> Refusal:
    result = tampered_result(w, t, lambda p: p.write_text('{"schema_version": 1, "scores": ' + deep_json() + "}"))
    return Refusal(["report", "--results", t / "runs", "--out", t / "report"], [result])


@refusal("predict:input-is-the-pairs-file-not-its-folder")
def _(w: World, t: Path) -> Refusal:
    pairs = w.data / "test" / "pairs.jsonl"
    return Refusal(predict_args(w, t, w.cng / "checkpoint", input_dir=pairs), [pairs])


@refusal("predict:output-an-empty-path")
def _(w: World, t: Path) -> Refusal:
    args = predict_args(w, t, w.cng / "checkpoint")
    args[args.index("--output") + 1] = ""
    return Refusal(args, ["--output"], cwd=t)


@refusal("run:ngram-size-longer-than-every-text")
def _(w: World, t: Path) -> Refusal:
    return Refusal(run_args(w.data, t / "out", "cngdist", "--param", "ngram_size=10000"), after_work=True)


@refusal("run:more-calibration-folds-than-problems")
def _(w: World, t: Path) -> Refusal:
    args = run_args(w.data, t / "out", "cngdist", "--param", "calibration_folds=100")
    return Refusal(args, ["100 folds", "16"], after_work=True)


@refusal("score:classic-truth-with-a-third-column")
def _(w: World, t: Path) -> Refusal:
    truth = t / "truth.txt"
    truth.write_text("P01 Y 0.93\nP02 N 0.12\n", encoding="utf-8")
    answers = write_rows(t / "answers.jsonl", [{"id": "P01", "value": 0.9}, {"id": "P02", "value": 0.1}])
    return Refusal(["score", "--task", "pan-classic", "--truth", truth, "--answers", answers], [f"{truth}:1"])


@refusal("leaderboard:result-json-with-an-empty-system-name")
def _(w: World, t: Path) -> Refusal:
    def edit(path: Path) -> None:
        result = json.loads(path.read_text(encoding="utf-8"))
        result["system"]["name"] = ""
        path.write_text(json.dumps(result), encoding="utf-8")

    result = tampered_result(w, t, edit)
    return Refusal(["leaderboard", t / "runs"], [result, "system.name"])


@refusal("leaderboard:output-onto-a-result-it-reads")
def _(w: World, t: Path) -> Refusal:
    result = w.run_copy(t, "cng") / "result.json"
    return Refusal(["leaderboard", t / "runs", "--output", result], [result])


@pytest.mark.parametrize("make", REFUSALS)
def test_refused_in_one_line_and_nothing_changes(world: World, tmp_path: Path, make) -> None:
    case = make(world, tmp_path)
    before = tree(tmp_path, world.root)
    line = refused(cli(*case.args, cwd=case.cwd), *case.names, after_work=case.after_work)
    for word in case.not_names:
        assert word not in line, line
    after = tree(tmp_path, world.root)
    if case.after_work:  # a run that failed after loading may leave the (empty) folders of its run on the way
        after = {path: data for path, data in after.items() if path in before or data is not None}
    assert after == before


# -- what a user should get: exit 0 and the right output ---------------------------------------------------------

ACCEPTED: list = []


def accepted(case_id: str, *marks: pytest.MarkDecorator) -> Callable:
    def register(check: Callable[[World, Path, str], None]) -> Callable[[World, Path, str], None]:
        ACCEPTED.append(pytest.param(check, id=case_id, marks=marks))
        return check

    return register


def run_answers(out: Path) -> bytes:
    """The answers.jsonl of the one run under `out`."""
    (answers,) = sorted(out.rglob("answers.jsonl"))
    return answers.read_bytes()


@accepted("run:crlf-blank-lines-and-no-final-newline")
def _(w: World, t: Path, reference: str) -> None:
    data = w.data_copy(t, "sample")
    for path in data.rglob("*.jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines()
        path.write_bytes(("\r\n\r\n".join(lines)).encode("utf-8"))  # blank lines between, no newline at the end
    ok(cli(*run_args(data, t / "out")))
    assert run_answers(t / "out") == (w.lr / "answers.jsonl").read_bytes()


@accepted("run:gzipped-splits")
def _(w: World, t: Path, reference: str) -> None:
    data = w.data_copy(t, "sample")
    for path in list(data.rglob("*.jsonl")):
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    ok(cli(*run_args(data, t / "out")))
    assert run_answers(t / "out") == (w.lr / "answers.jsonl").read_bytes()


@accepted("run:an-8-mb-text-on-one-line")
def _(w: World, t: Path, reference: str) -> None:
    data = w.data_copy(t)
    items = rows(data / "test" / "pairs.jsonl")
    items[0]["pair"][1] = "a very long text. " * 450_000
    write_rows(data / "test" / "pairs.jsonl", items)
    ok(cli(*run_args(data, t / "out")))
    assert [row["id"] for row in map(json.loads, run_answers(t / "out").splitlines())] == [i["id"] for i in items]


@accepted("run:ids-that-look-like-paths-never-become-paths")
def _(w: World, t: Path, reference: str) -> None:
    data = w.data_copy(t)
    ids = ["../../escaped", "/etc/passwd", "C:\\x", "a\nb", "<b>x</b>", "=1+1", ".", "nul"]
    for name in ("pairs.jsonl", "truth.jsonl"):
        path = data / "test" / name
        write_rows(path, [{**row, "id": new} for row, new in zip(rows(path), ids, strict=True)])
    ok(cli(*run_args(data, t / "work" / "out")))
    assert [json.loads(line)["id"] for line in run_answers(t / "work" / "out").splitlines()] == ids
    assert sorted(p.name for p in t.iterdir()) == ["data", "work"]  # nothing beside the output
    assert sorted(p.name for p in (t / "work").iterdir()) == ["out"]


@accepted("run:seed-above-2-to-the-32")
def _(w: World, t: Path, reference: str) -> None:
    ok(cli(*run_args(w.data, t / "out", "compressor", "--seed", str(2**32))))
    assert (t / "out" / "pan23" / "sample" / "compressor" / f"seed-{2**32}" / "result.json").is_file()


@accepted("run:one-class-training-split-warns")
def _(w: World, t: Path, reference: str) -> None:
    data = w.data_copy(t)
    truth = data / "train" / "truth.jsonl"
    write_rows(truth, [{**row, "same": True, "authors": ["x", "x"]} for row in rows(truth)])
    done = cli(*run_args(data, t / "out"))
    ok(done)
    (warning,) = [line for line in done.stderr.splitlines() if "same-author" in line or "one class" in line]
    assert str(data / "train") in warning


@accepted("run:one-class-test-split-scores-as-harness-score-does")
def _(w: World, t: Path, reference: str) -> None:
    data = w.data_copy(t)
    truth = data / "test" / "truth.jsonl"
    write_rows(truth, [{**row, "same": False, "authors": ["x", row["id"]]} for row in rows(truth)])
    ok(cli(*run_args(data, t / "out")))
    (result,) = (t / "out").rglob("result.json")
    ok(cli(*score_args(w, result.parent / "answers.jsonl", "--output", t / "scored", truth=truth)))
    scored = json.loads((t / "scored" / "out.json").read_text(encoding="utf-8"))
    recorded = json.loads(result.read_text(encoding="utf-8"))["scores"]
    assert {pan: recorded[name] for name, pan in PAN_OUT_NAMES.items() if pan in scored} == scored


@accepted("run:a-discourse-type-with-a-slash-gets-its-row")
def _(w: World, t: Path, reference: str) -> None:
    data = w.data_copy(t)
    for split in ("train", "test"):
        path = data / split / "pairs.jsonl"
        types = [["chat/sms", "email"], ["essay", "memo"]]
        write_rows(path, [{**row, "discourse_types": types[i % 2]} for i, row in enumerate(rows(path))])
    lines = ok(cli(*run_args(data, t / "out"))).splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    labels = [line.split()[0] for line in lines[rule + 1 :] if not line.startswith(("main score:", "every score:"))]
    assert labels[:3] == ["all", "chat/sms+email", "essay+memo"], "\n".join(lines)


@accepted("run:output-folder-with-spaces-and-emoji")
def _(w: World, t: Path, reference: str) -> None:
    out = t / "my runs \U0001f600 (copy)"
    ok(cli(*run_args(w.data, out)))
    assert run_answers(out) == (w.lr / "answers.jsonl").read_bytes()


@accepted("run:rerun-of-a-finished-run-keeps-it-byte-identical")
def _(w: World, t: Path, reference: str) -> None:
    w.run_copy(t, "lr")
    before = tree(t)
    stdout = ok(cli(*run_args(w.data, t / "runs")))
    assert stdout.startswith("kept: ")
    assert tree(t) == before


@accepted("score:answers-crlf")
def _(w: World, t: Path, reference: str) -> None:
    answers = t / "answers.jsonl"
    answers.write_bytes(w.answers.read_bytes().replace(b"\n", b"\r\n"))
    assert ok(cli(*score_args(w, answers))) == reference


@accepted("score:answers-gzipped")
def _(w: World, t: Path, reference: str) -> None:
    answers = t / "answers.jsonl.gz"
    answers.write_bytes(gzip.compress(w.answers.read_bytes()))
    assert ok(cli(*score_args(w, answers))) == reference


@accepted("score:answers-in-reverse-order-with-extra-fields")
def _(w: World, t: Path, reference: str) -> None:
    items = [{**row, "note": "<b>mine</b>", "rank": 3} for row in reversed(rows(w.answers))]
    answers = write_rows(t / "answers.jsonl", items)
    assert ok(cli(*score_args(w, answers))) == reference


@accepted("score:answers-as-one-element-lists")
def _(w: World, t: Path, reference: str) -> None:
    answers = write_rows(t / "answers.jsonl", [{**row, "value": [row["value"]]} for row in rows(w.answers)])
    assert ok(cli(*score_args(w, answers))) == reference


@accepted("score:answers-with-a-utf8-bom")
def _(w: World, t: Path, reference: str) -> None:
    """Notepad's UTF-8: read as the same answers, or refused in one line naming the file's first line."""
    answers = t / "answers.jsonl"
    answers.write_bytes(b"\xef\xbb\xbf" + w.answers.read_bytes())
    done = cli(*score_args(w, answers))
    if done.returncode == 0:
        assert ok(done) == reference
    else:
        refused(done, f"{answers}:1", "BOM")


@accepted("score:truth-gzipped-in-a-folder")
def _(w: World, t: Path, reference: str) -> None:
    (t / "test").mkdir()
    (t / "test" / "truth.jsonl.gz").write_bytes(gzip.compress(w.truth.read_bytes()))
    shutil.copy(w.truth.parent / "pairs.jsonl", t / "test")  # a split folder: its type pairs are scored too
    assert ok(cli(*score_args(w, w.answers, truth=t / "test"))) == reference


@accepted("score:some-answers-missing-warns-once")
def _(w: World, t: Path, reference: str) -> None:
    answers = write_rows(t / "answers.jsonl", rows(w.answers)[:3])
    done = cli(*score_args(w, answers))
    ok(done)
    (warning,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert "5 of 8 problems have no answer" in warning and str(answers) in warning


@accepted("score:one-class-truth-writes-finite-tira-files")
def _(w: World, t: Path, reference: str) -> None:
    truth = write_rows(t / "truth.jsonl", [{**row, "same": True, "authors": ["x", "x"]} for row in rows(w.truth)])
    ok(cli(*score_args(w, w.answers, "--output", t / "out", truth=truth)))
    scores = json.loads((t / "out" / "out.json").read_text(encoding="utf-8"))
    assert scores["auc"] == 0.0  # PAN's evaluator writes 0.0 where AUC is undefined
    assert (t / "out" / "evaluation.prototext").is_file()


@accepted("predict:input-with-a-broken-truth-beside-it")
def _(w: World, t: Path, reference: str) -> None:
    shutil.copytree(w.data / "test", t / "input")
    (t / "input" / "truth.jsonl").write_bytes(b'{"id": "test-01", "sa')  # predict never reads truth
    ok(cli(*predict_args(w, t, w.cng / "checkpoint", input_dir=t / "input")))
    assert (t / "out" / "answers.jsonl").read_bytes() == w.answers.read_bytes()


@accepted("predict:empty-texts-and-odd-ids")
def _(w: World, t: Path, reference: str) -> None:
    items = rows(w.data / "test" / "pairs.jsonl")
    items[0] |= {"id": "../../../tmp/x", "pair": ["", "   "]}
    items[1] |= {"id": "\u202eevil.exe"}
    write_rows(t / "input" / "pairs.jsonl", items)
    ok(cli(*predict_args(w, t, w.cng / "checkpoint", input_dir=t / "input")))
    answers = rows(t / "out" / "answers.jsonl")
    assert [a["id"] for a in answers] == [i["id"] for i in items]
    assert answers[0]["value"] == 0.5
    assert sorted(p.name for p in t.iterdir()) == ["input", "out"]


@accepted("convert:stray-files-beside-the-problems")
def _(w: World, t: Path, reference: str) -> None:
    corpus = shutil.copytree(w.corpus, t / "corpus")
    (corpus / "README.txt").write_text("notes of mine\n", encoding="utf-8")
    (corpus / ".DS_Store").write_bytes(b"\x00\x01")
    (corpus / "__MACOSX").mkdir()
    (corpus / "__MACOSX" / "._P01").write_bytes(b"\x00")
    ok(cli("convert", corpus, t / "out"))
    assert [row["id"] for row in rows(t / "out" / "pairs.jsonl")] == ["P01", "P02"]


@accepted("convert:bom-and-crlf-texts-convert-as-clean-ones")
def _(w: World, t: Path, reference: str) -> None:
    corpus = shutil.copytree(w.corpus, t / "corpus")
    for path in corpus.rglob("*.txt"):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    ok(cli("convert", corpus, t / "dirty"))
    ok(cli("convert", w.corpus, t / "clean"))
    for name in ("pairs.jsonl", "truth.jsonl"):
        assert (t / "dirty" / name).read_bytes() == (t / "clean" / name).read_bytes()


@accepted("pairs:crlf-jsonl-builds-the-same-bytes")
def _(w: World, t: Path, reference: str) -> None:
    source = t / "texts.jsonl"
    source.write_bytes(w.texts.read_bytes().replace(b"\n", b"\r\n"))
    ok(cli(*pairs_args(source, t / "dirty")))
    ok(cli(*pairs_args(w.texts, t / "clean")))
    for split in ("train", "test"):
        for name in ("pairs.jsonl", "truth.jsonl"):
            assert (t / "dirty" / split / name).read_bytes() == (t / "clean" / split / name).read_bytes()


@accepted("leaderboard:ci-without-details-says-so-in-a-note")
def _(w: World, t: Path, reference: str) -> None:
    details = w.run_copy(t, "lr") / "details.jsonl"
    details.unlink()
    table = ok(cli("leaderboard", t / "runs", "--ci", "--resamples", "20"))
    row = next(line for line in table.splitlines() if line.startswith("| length_ratio |"))
    assert row.endswith("| - |")  # no interval, and a note says why
    assert f"intervals not available: {details}: missing" in table


@accepted("run:texts-with-nul-line-separators-and-direction-marks")
def _(w: World, t: Path, reference: str) -> None:
    data = w.data_copy(t)
    items = rows(data / "test" / "pairs.jsonl")
    items[0]["pair"][0] = "nul \u0000 here\u2028line sep\u2029para \u202eright to left\u202c \ufeff zero width"
    items[1]["pair"][1] = "combining e\u0301\u0301\u0301 and a smile \U0001f600 and a lone half \ud83d"
    write_rows(data / "test" / "pairs.jsonl", items)
    ok(cli(*run_args(data, t / "out", "cngdist")))
    assert len(run_answers(t / "out").splitlines()) == 8


@accepted("score:classic-truth-lowercase-tabs-crlf-and-blank-lines")
def _(w: World, t: Path, reference: str) -> None:
    answers = write_rows(t / "answers.jsonl", [{"id": "P01", "value": 0.9}, {"id": "P02", "value": 0.3}])
    (t / "clean.txt").write_text("P01 Y\nP02 N\n", encoding="utf-8")
    (t / "dirty.txt").write_bytes(b"P01\ty \r\n\r\nP02\tn\r\n\r\n")
    scored = [
        ok(cli("score", "--task", "pan-classic", "--truth", t / name, "--answers", answers))
        for name in ("clean.txt", "dirty.txt")
    ]
    assert scored[0] == scored[1]


@accepted("pairs:the-same-text-under-several-authors-is-left-out")
def _(w: World, t: Path, reference: str) -> None:
    items = rows(w.texts)
    for item in items[::6]:  # every author's first email: one chain letter they all forwarded
        item["text"] = "the same chain letter, forwarded by everyone who got it"
    source = write_rows(t / "texts.jsonl", items)
    ok(cli(*pairs_args(source, t / "out")))
    texts = [
        text for split in ("train", "test") for row in rows(t / "out" / split / "pairs.jsonl") for text in row["pair"]
    ]
    assert "the same chain letter, forwarded by everyone who got it" not in texts
    manifest = (t / "out" / "manifest.json").read_text(encoding="utf-8")
    assert "same text under several authors" in manifest


@accepted("leaderboard:a-symlink-loop-in-the-results")
def _(w: World, t: Path, reference: str) -> None:
    w.run_copy(t)
    plain = ok(cli("leaderboard", t / "runs"))
    (t / "runs" / "pan23" / "again").symlink_to(t / "runs")
    assert ok(cli("leaderboard", t / "runs")) == plain


@accepted("score:a-record-scored-by-another-evaluator-is-not-ranked-with-the-tasks-runs")
def _(w: World, t: Path, reference: str) -> None:
    record = t / "record"
    done = cli(*score_args(w, w.answers, "--record", record, "--evaluator", "pan20", "--system-name", "pan20-record"))
    if done.returncode != 0:
        refused(done, "--evaluator")
        return
    board = cli("leaderboard", w.runs, record)
    if board.returncode != 0:
        refused(board, record / "result.json")
        return
    tables = ok(board).split("### ")
    assert not any("| cngdist |" in table and "| pan20-record |" in table for table in tables), board.stdout


@accepted("report:a-run-without-details-is-left-out-of-the-figures-saying-so")
def _(w: World, t: Path, reference: str) -> None:
    """Not a half report (tables written, then a failure on the plots): the whole report, that run's curves left
    out with a note naming its missing details.jsonl."""
    result = w.run_copy(t, "lr") / "result.json"
    (result.parent / "details.jsonl").unlink()
    ok(cli("report", "--results", t / "runs", "--out", t / "report", "--no-ci", "--no-significance"))
    for index in ("index.md", "index.html"):
        assert str(result) in (t / "report" / index).read_text(encoding="utf-8"), index
    assert "| length_ratio |" in (t / "report" / "index.md").read_text(encoding="utf-8")
    assert list((t / "report" / "plots").glob("roc-*.png"))  # cngdist's curves are still drawn
    assert not [p.name for p in t.glob(".report.*") if p.is_dir()]  # no staging folder left


@accepted("plot:refuses-to-replace-earlier-figures")
def _(w: World, t: Path, reference: str) -> None:
    ok(cli("plot", w.runs, "--out", t / "figures"))
    before = tree(t)
    refused(cli("plot", w.runs, "--out", t / "figures"), t / "figures", "--overwrite")
    assert tree(t) == before


@pytest.mark.parametrize("check", ACCEPTED)
def test_works_and_leaves_earlier_files_alone(world: World, tmp_path: Path, reference_scores: str, check) -> None:
    before = tree(world.root)
    check(world, tmp_path, reference_scores)
    assert tree(world.root) == before


# -- names that carry markup: escaped in every format ------------------------------------------------------------

NASTY = "<script>alert(1)</script>|a\n# H **b** _c_ & 50% $x$ #1 {y} \\z ~ ^"
FORMULA = '=HYPERLINK("http://example.com","x")'


@pytest.fixture(scope="module")
def nasty_records(world: World, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two recorded answers files, named with markup and a spreadsheet formula, beside the two runs."""
    root = tmp_path_factory.mktemp("nasty")
    results = shutil.copytree(world.runs, root / "results")
    for name, answers in ((NASTY, world.answers), (FORMULA, world.lr / "answers.jsonl")):
        folder = results / "records" / ("nasty" if name == NASTY else "formula")
        ok(cli(*score_args(world, answers, "--record", folder, "--system-name", name)))
    return results


def markdown_table_rows(text: str) -> list[list[str]]:
    """The rows of the first Markdown table in `text`, split at unescaped pipes."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| system |"))
    table = []
    for line in lines[start:]:
        if not line.strip():
            break
        assert line.startswith("|") and line.endswith("|"), line
        table.append([cell.strip() for cell in line.replace("\\|", "\0").strip("|").split("|")])
    return table


def check_markdown(text: str) -> None:
    table = markdown_table_rows(text)
    assert len(table) == 2 + 4  # header, rule, two runs and two records
    assert len({len(row) for row in table}) == 1
    assert "<script>" not in text
    assert not any(line.startswith("# H") for line in text.splitlines())


@pytest.mark.parametrize(
    "fmt",
    ["markdown", "csv", "latex", "json"],
)
def test_names_with_markup_are_escaped_in_every_leaderboard_format(nasty_records: Path, tmp_path: Path, fmt) -> None:
    before = tree(nasty_records)
    text = ok(cli("leaderboard", nasty_records, "--format", fmt))
    assert tree(nasty_records) == before
    if fmt == "markdown":
        check_markdown(text)
    elif fmt == "csv":
        import csv
        import io

        table = list(csv.reader(io.StringIO(text)))
        names = {row[3] for row in table[1:] if row}  # task, dataset, version, system
        assert NASTY in names or any(name.lstrip("'") == NASTY for name in names)
        assert not any(cell[:1] in ("=", "+", "-", "@") for row in table[1:] for cell in row[:4] if cell)
    elif fmt == "latex":
        assert "\\#1" in text and "50\\%" in text and "\\&" in text and "\\$x\\$" in text
        assert "<script>" not in text
    else:
        names = {row["system"] for table in json.loads(text) for row in table["rows"]}
        assert {NASTY, FORMULA} <= names  # JSON keeps the names as they are: its reader escapes


def test_names_with_markup_are_escaped_in_the_report(nasty_records: Path, tmp_path: Path) -> None:
    ok(cli("report", "--results", nasty_records, "--out", tmp_path / "report", "--resamples", "20"))
    check_markdown((tmp_path / "report" / "index.md").read_text(encoding="utf-8"))
    check_markdown((tmp_path / "report" / "tables" / "leaderboard.md").read_text(encoding="utf-8"))
    html = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in html


def test_discourse_types_with_markup_are_escaped_in_the_per_pair_tables(world: World, tmp_path: Path) -> None:
    data = world.data_copy(tmp_path)
    for split in ("train", "test"):
        path = data / split / "pairs.jsonl"
        types = [["<i>mail</i>|x", "=cmd()"], ["essay", "**memo**"]]
        write_rows(path, [{**row, "discourse_types": types[i % 2]} for i, row in enumerate(rows(path))])
    ok(cli(*run_args(data, tmp_path / "runs")))
    text = ok(cli("leaderboard", tmp_path / "runs"))
    assert "<i>" not in text
    header = next(line for line in text.splitlines() if "(n=" in line)
    assert header.replace("\\|", "").count("|") == 5, header  # system, runs, two pair types: no cell split by data
    csv_text = ok(cli("leaderboard", tmp_path / "runs", "--format", "csv"))
    assert not any(cell.startswith("=") for line in csv_text.splitlines() for cell in line.split(","))


# -- kill -9 in the middle, then the same command again ----------------------------------------------------------

KILL = r"""
import os, signal, sys
from pathlib import Path

how, what, *args = sys.argv[1:]
if how == "fit":  # SIGKILL as the system named `what` starts fitting
    from harness import registry

    def fit(self, *a, **k):
        os.kill(os.getpid(), signal.SIGKILL)

    registry.system_class(what).fit = fit
else:  # SIGKILL just before a file or folder is renamed to the name `what` (every write lands with a rename)
    real = os.replace

    def replace(src, dst, *a, **k):
        if Path(dst).name == what:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst, *a, **k)

    os.replace = replace
from harness.cli import main

main(args, prog_name="harness")
"""


def killed(how: str, what: str, *args: object) -> None:
    """`harness ARGS` in a process that SIGKILLs itself at `how` (`fit` of a system, or `rename` onto a name)."""
    command = [sys.executable, "-c", KILL, how, what, *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, env=env(), timeout=TIMEOUT, check=False)
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr


def own_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


KILLS: list = []


def kill_case(case_id: str, *marks: pytest.MarkDecorator) -> Callable:
    def register(check: Callable[[World, Path], None]) -> Callable[[World, Path], None]:
        KILLS.append(pytest.param(check, id=case_id, marks=marks))
        return check

    return register


@kill_case("run:killed-while-fitting-then-rerun")
def _(w: World, t: Path) -> None:
    killed("fit", "length_ratio", *run_args(w.data, t / "out"))
    assert not list((t / "out").rglob("result.json"))
    assert ok(cli(*run_args(w.data, t / "out"))).startswith("done: ")  # the killed run's lock holds nobody up
    run_dir = t / "out" / "pan23" / "sample" / "length_ratio" / "seed-0"
    assert (run_dir / "answers.jsonl").read_bytes() == (w.lr / "answers.jsonl").read_bytes()
    assert own_files(run_dir.parent) == own_files(w.lr.parent)


@kill_case("run:killed-before-its-details-then-rerun-resumes")
def _(w: World, t: Path) -> None:
    killed("rename", "details.jsonl", *run_args(w.data, t / "out", "cngdist"))
    assert not list((t / "out").rglob("result.json"))
    done = cli(*run_args(w.data, t / "out", "cngdist"))
    assert ok(done).startswith("done: ") and "resuming from the fitted checkpoint" in done.stderr
    run_dir = t / "out" / "pan23" / "sample" / "cngdist" / "seed-0"
    assert (run_dir / "answers.jsonl").read_bytes() == w.answers.read_bytes()
    assert own_files(run_dir.parent) == own_files(w.cng.parent)


@kill_case("score:record-killed-before-its-result-then-rerun")
def _(w: World, t: Path) -> None:
    record = t / "record"
    killed("rename", "result.json", *score_args(w, w.answers, "--record", record))
    assert not (record / "result.json").exists()
    refused(cli("leaderboard", record), "no result.json")  # a half record is never shown
    ok(cli(*score_args(w, w.answers, "--record", record)))
    ok(cli("leaderboard", record, "--ci", "--resamples", "20"))  # its details are the ones its result names


@kill_case("predict:killed-before-its-answers-then-rerun")
def _(w: World, t: Path) -> None:
    killed("rename", "answers.jsonl", *predict_args(w, t, w.cng / "checkpoint"))
    assert not (t / "out" / "answers.jsonl").exists()
    ok(cli(*predict_args(w, t, w.cng / "checkpoint")))
    assert (t / "out" / "answers.jsonl").read_bytes() == w.answers.read_bytes()


@kill_case("convert:overwrite-killed-between-its-two-files-leaves-no-mix")
def _(w: World, t: Path) -> None:
    out = t / "out"
    ok(cli("convert", w.corpus, out))
    old = {name: (out / name).read_bytes() for name in ("pairs.jsonl", "truth.jsonl")}
    corpus = classic_corpus(t / "corrected", truth=b"P01 N\nP02 Y\n")  # the labels were wrong: corrected
    killed("rename", "pairs.jsonl", "convert", corpus, out, "--overwrite")
    now = {name: (out / name).read_bytes() for name in ("pairs.jsonl", "truth.jsonl") if (out / name).exists()}
    mixed = now.get("pairs.jsonl") == old["pairs.jsonl"] and now.get("truth.jsonl") not in (None, old["truth.jsonl"])
    assert not mixed, "the old pairs beside the new truth: `harness run` would score the old texts by new labels"
    ok(cli("convert", corpus, out, "--overwrite"))
    assert [row["same"] for row in rows(out / "truth.jsonl")] == [False, True]


@kill_case("pairs:killed-before-its-dataset-lands-then-rerun")
def _(w: World, t: Path) -> None:
    killed("rename", "out", *pairs_args(w.texts, t / "out"))
    assert not (t / "out").exists()
    ok(cli(*pairs_args(w.texts, t / "out")))
    ok(cli(*pairs_args(w.texts, t / "again")))
    assert own_files(t / "out") == own_files(t / "again")


@kill_case("report:killed-before-its-index-then-rerun")
def _(w: World, t: Path) -> None:
    args = ["report", "--results", w.runs, "--out", t / "report", "--resamples", "20"]
    killed("rename", "index.html", *args)
    assert not (t / "report" / "index.md").exists()  # the index comes last: a half report has none
    done = cli(*args)
    if done.returncode == 0:
        assert (t / "report" / "index.md").is_file()
    else:
        refused(done, t / "report")


@pytest.mark.parametrize("check", KILLS)
def test_killed_then_run_again(world: World, tmp_path: Path, check) -> None:
    before = tree(world.root)
    check(world, tmp_path)
    assert tree(world.root) == before


TEMPORARIES = [
    pytest.param(
        lambda w, t: predict_args(w, t, w.cng / "checkpoint"), "answers.jsonl", "out",
        id="predict",
    ),
    pytest.param(
        lambda w, t: score_args(w, w.answers, "--record", t / "out"), "result.json", "out", id="score --record",
    ),
    pytest.param(
        lambda w, t: score_args(w, w.answers, "--output", t / "out"), "out.json", "out", id="score --output",
    ),
    pytest.param(
        lambda w, t: ["convert", w.corpus, t / "out"], "pairs.jsonl", "out", id="convert",  # fixed: convert.py
    ),
    pytest.param(
        lambda w, t: pairs_args(w.texts, t / "out"), "out", "", id="pairs",
    ),
    pytest.param(lambda w, t: run_args(w.data, t / "out"), "answers.jsonl", "out", id="run"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "at", "folder"), TEMPORARIES)
def test_a_killed_command_leaves_nothing_once_run_again(world: World, tmp_path: Path, args, at, folder) -> None:
    """What a command killed at its last rename left (a whole temporary copy of its output) is gone after a rerun,
    as `harness run` removes what a killed run left."""
    (tmp_path / "work").mkdir()
    killed("rename", at, *args(world, tmp_path / "work"))
    ok(cli(*args(world, tmp_path / "work"), "--overwrite"))
    left = [p.name for p in (tmp_path / "work" / folder).rglob(".*") if not p.name.endswith(".lock")]
    assert not left


# -- two commands at once into one folder ------------------------------------------------------------------------

PAUSE = r"""
import os, sys, time
from pathlib import Path

what, gate, *args = sys.argv[1:]
real = os.replace


def replace(src, dst, *a, **k):  # wait at the rename onto `what` until told to go on
    if Path(dst).name == what and not Path(gate + ".passed").exists():
        Path(gate + ".waiting").touch()
        while not Path(gate + ".go").exists():
            time.sleep(0.05)
        Path(gate + ".passed").touch()
    return real(src, dst, *a, **k)


os.replace = replace
from harness.cli import main

main(args, prog_name="harness")
"""


def start(*args: object) -> subprocess.Popen:
    command = [sys.executable, "-m", "harness.cli", *map(str, args)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())


def finish(process: subprocess.Popen) -> subprocess.CompletedProcess:
    stdout, stderr = process.communicate(timeout=TIMEOUT)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@contextlib.contextmanager
def paused(gate: Path, what: str, *args: object) -> Iterator[subprocess.Popen]:
    """`harness ARGS` running and held just before its rename onto `what`, until the block ends."""
    command = [sys.executable, "-c", PAUSE, what, str(gate), *map(str, args)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    try:
        deadline = time.monotonic() + TIMEOUT
        while not Path(f"{gate}.waiting").exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        yield process
    finally:
        Path(f"{gate}.go").touch()
        if process.poll() is None:
            process.wait(timeout=TIMEOUT)


def test_two_identical_runs_at_once_compute_it_once(world: World, tmp_path: Path) -> None:
    first, second = (start(*run_args(world.data, tmp_path / "out", "cngdist")) for _ in range(2))
    outputs = [ok(finish(first)), ok(finish(second))]
    assert sorted(output.split(":")[0] for output in outputs) == ["done", "kept"]
    (run_dir,) = [path.parent for path in (tmp_path / "out").rglob("result.json")]
    assert (run_dir / "answers.jsonl").read_bytes() == world.answers.read_bytes()


def test_two_systems_at_once_into_one_folder(world: World, tmp_path: Path) -> None:
    runs = [start(*run_args(world.data, tmp_path / "out", system)) for system in ("length_ratio", "compressor")]
    for process in runs:
        ok(finish(process))
    table = ok(cli("leaderboard", tmp_path / "out", "--ci", "--resamples", "20"))
    assert "| compressor |" in table and "| length_ratio |" in table


def test_two_records_into_one_folder_never_mix(world: World, tmp_path: Path) -> None:
    """One `score --record` held before its result.json lands while a second records other answers there."""
    record = tmp_path / "record"
    first_args = score_args(world, world.answers, "--record", record, "--system-name", "first")
    with paused(tmp_path / "gate", "result.json", *first_args) as first:
        second = cli(*score_args(world, world.lr / "answers.jsonl", "--record", record, "--system-name", "second"))
    first_done = subprocess.CompletedProcess(first.args, first.returncode, *first.communicate())
    assert {first_done.returncode, second.returncode} <= {0, 2}
    assert 0 in {first_done.returncode, second.returncode}
    ok(cli("leaderboard", record, "--ci", "--resamples", "20"))  # the details are those of the recorded answers


# -- full and read-only file systems -----------------------------------------------------------------------------


@contextlib.contextmanager
def mounted(point: Path, *options: str) -> Iterator[Path]:
    """A file system mounted at `point` for the block (`mount OPTIONS ... point`); skips where that is not allowed."""
    point.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a file system needs root")
    done = subprocess.run(["mount", *options, str(point)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here: {done.stderr.strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs filled to the last byte by a user's file."""
    with mounted(tmp_path / "disk", "-t", "tmpfs", "-o", "size=1m", "tmpfs") as disk:
        with open(disk / "ballast", "wb", buffering=0) as handle, contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 4096)
        yield disk


FULL_DISK = [
    pytest.param(lambda w, d: run_args(w.data, d / "runs"), True, id="run"),
    pytest.param(lambda w, d: run_args(w.data, d / "runs", "cngdist"), True, id="run-cngdist-checkpoint"),
    pytest.param(lambda w, d: predict_args(w, d, w.cng / "checkpoint"), True, id="predict"),
    pytest.param(lambda w, d: score_args(w, w.answers, "--output", d / "out"), False, id="score --output"),
    pytest.param(lambda w, d: score_args(w, w.answers, "--record", d / "out"), False, id="score --record"),
    pytest.param(lambda w, d: ["convert", w.corpus, d / "out"], False, id="convert"),
    pytest.param(lambda w, d: pairs_args(w.texts, d / "out"), False, id="pairs"),
    pytest.param(lambda w, d: ["leaderboard", w.runs, "--output", d / "board.md"], False, id="leaderboard --output"),
    pytest.param(lambda w, d: ["plot", w.runs, "--out", d / "out"], False, id="plot"),
    pytest.param(
        lambda w, d: ["report", "--results", w.runs, "--out", d / "out", "--resamples", "20"], False, id="report"
    ),
]


@pytest.mark.parametrize(("args", "after_work"), FULL_DISK)
def test_a_full_disk_is_one_line_and_leaves_nothing(world: World, full_disk: Path, args, after_work: bool) -> None:
    """A disk that fills while a command writes: one line naming the file and the OS's reason, no file left behind
    (empty folders made on the way may stay), the user's files on that disk as they were."""
    before = tree(world.root, full_disk)
    refused(cli(*args(world, full_disk)), full_disk, "No space left on device", after_work=after_work)
    after = tree(world.root, full_disk)
    files = {path: data for path, data in after.items() if data is not None}
    assert files == {path: data for path, data in before.items() if data is not None}


@pytest.fixture
def read_only_runs(world: World, tmp_path: Path) -> Iterator[Path]:
    """The module's runs, seen through a read-only bind mount."""
    copy = shutil.copytree(world.runs, tmp_path / "runs")
    with mounted(tmp_path / "archive", "--bind", "-o", "ro", str(copy)) as archive:
        probe = subprocess.run(["touch", str(archive / "probe")], capture_output=True, check=False)
        if probe.returncode == 0:
            pytest.skip("the bind mount is not read-only here")
        yield archive


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(lambda r, t: ["leaderboard", r, "--ci", "--significance", "--resamples", "20"], id="leaderboard"),
        pytest.param(lambda r, t: ["plot", r, "--out", t / "figures"], id="plot"),
        pytest.param(lambda r, t: ["report", "--results", r, "--out", t / "report", "--resamples", "20"], id="report"),
    ],
)
def test_results_on_a_read_only_file_system_are_read(read_only_runs: Path, tmp_path: Path, args) -> None:
    ok(cli(*args(read_only_runs, tmp_path)))


def test_a_finished_run_on_a_read_only_file_system(world: World, read_only_runs: Path) -> None:
    """Its stored scores are shown (a run is kept, never written), or it is refused in one line naming the folder."""
    done = cli(*run_args(world.data, read_only_runs))
    if done.returncode == 0:
        assert ok(done).startswith("kept: ")
    else:
        refused(done, read_only_runs)


def test_two_pairs_builds_into_one_folder(world: World, tmp_path: Path) -> None:
    """One build held just before its dataset lands while a second (another seed) lands first: refused in one line."""
    out = tmp_path / "out"
    with paused(tmp_path / "gate", "out", *pairs_args(world.texts, out)) as first:
        ok(cli(*pairs_args(world.texts, out, "--seed", "1")))
        landed = tree(out)
    refused(subprocess.CompletedProcess(first.args, first.wait(), *first.communicate()), out)
    assert tree(out) == landed
