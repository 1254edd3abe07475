"""core.progress: a tqdm bar on a terminal, plain periodic log lines otherwise."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from core.errors import HarnessError
from core.progress import INTERVAL_VARIABLE, Progress, format_duration, pbar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


@pytest.fixture
def piped(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Pipe:
    """stderr is not a terminal, and every update may log (interval 0)."""
    stream = Pipe()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setenv(INTERVAL_VARIABLE, "0")
    caplog.set_level(logging.INFO, logger="harness")
    return stream


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "harness"]


def test_without_a_terminal_lines_give_counts_rate_and_eta(piped: Pipe, caplog: pytest.LogCaptureFixture) -> None:
    with Progress(10, desc="encoding chunks", unit="texts") as progress:
        progress.update(3)
        progress.update(3)
    first, second, end = lines(caplog)
    assert first.startswith("encoding chunks: 3/10 texts (30%), ")
    assert " texts/s, eta " in first
    assert second.startswith("encoding chunks: 6/10 texts (60%), ")
    assert end.startswith("encoding chunks: 6/10 texts (60%), ") and ", took " in end
    assert piped.getvalue() == ""  # no bar drawn into a log file


class Clock:
    """A stand-in for time.perf_counter that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_lines_come_at_most_once_per_interval_and_at_the_end(
    piped: Pipe, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr("core.progress.time.perf_counter", clock)
    monkeypatch.setenv(INTERVAL_VARIABLE, "30")
    with Progress(100, desc="scoring", unit="problems") as progress:
        for _ in range(100):
            clock.now += 1.0  # one problem a second: a line every 30 of them
            progress.update()
        clock.now += 2.0
    assert [line.split(", ")[0] for line in lines(caplog)] == [
        "scoring: 30/100 problems (30%)",
        "scoring: 60/100 problems (60%)",
        "scoring: 90/100 problems (90%)",
        "scoring: 100/100 problems (100%)",
    ]
    assert lines(caplog)[0] == "scoring: 30/100 problems (30%), 1.00 problems/s, eta 1m10s"
    assert lines(caplog)[-1] == "scoring: 100/100 problems (100%), 0.98 problems/s, took 1m42s"


def test_quick_work_gets_no_end_line(piped: Pipe, caplog: pytest.LogCaptureFixture, monkeypatch) -> None:
    clock = Clock()
    monkeypatch.setattr("core.progress.time.perf_counter", clock)
    monkeypatch.setenv(INTERVAL_VARIABLE, "30")
    with Progress(3, desc="fold", unit="problems") as progress:
        clock.now += 0.2
        progress.update(3)
    assert lines(caplog) == []


def test_advancing_by_n_and_the_postfix_show_in_the_line(piped: Pipe, caplog: pytest.LogCaptureFixture) -> None:
    progress = Progress(5000, desc="train epoch 1/3", unit="samples")
    progress.set_postfix(loss=0.412345678)
    progress.update(1200)
    assert lines(caplog)[-1].startswith("train epoch 1/3: 1200/5000 samples (24%), ")
    assert lines(caplog)[-1].endswith(", loss=0.4123")
    progress.set_postfix(loss=0.25, step=7)
    progress.update(800)
    assert lines(caplog)[-1].startswith("train epoch 1/3: 2000/5000 samples (40%), ")
    assert lines(caplog)[-1].endswith(", loss=0.25, step=7")


def test_an_unknown_total_shows_the_count_and_rate(piped: Pipe, caplog: pytest.LogCaptureFixture) -> None:
    assert list(pbar(iter("abc"), desc="reading posts", unit="posts")) == ["a", "b", "c"]
    assert lines(caplog)[0].startswith("reading posts: 1 posts, ")
    assert "eta" not in lines(caplog)[0]
    assert lines(caplog)[-1].startswith("reading posts: 3 posts, ") and ", took " in lines(caplog)[-1]


def test_pbar_takes_the_total_from_len_and_has_no_end_line_after_a_failure(
    piped: Pipe, caplog: pytest.LogCaptureFixture
) -> None:
    assert list(pbar([1, 2], desc="a", unit="problems")) == [1, 2]
    assert lines(caplog)[-1].startswith("a: 2/2 problems (100%), ")
    caplog.clear()
    with pytest.raises(ValueError):
        for item in pbar([1, 2, 3], desc="b", unit="problems"):
            if item == 2:
                raise ValueError("bad problem")
    assert lines(caplog) == [lines(caplog)[0]]
    assert lines(caplog)[0].startswith("b: 1/3 problems (33%), ")  # the periodic line only, no "took"


def test_end_line_false_and_disable(piped: Pipe, caplog: pytest.LogCaptureFixture) -> None:
    with Progress(2, desc="quiet", disable=True) as progress:
        progress.update(2)
    with Progress(2, desc="no end", end_line=False) as progress:
        progress.update(2)
    assert [line.split(":")[0] for line in lines(caplog)] == ["no end"]
    assert "took" not in lines(caplog)[0]


def test_on_a_terminal_a_tqdm_bar_and_no_log_lines(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tqdm.std import tqdm

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv(INTERVAL_VARIABLE, "0")
    caplog.set_level(logging.INFO, logger="harness")
    with Progress(10, desc="encoding posts", unit="posts") as progress:
        assert isinstance(progress._bar, tqdm)
        progress.update(4)
        progress.set_postfix(loss=0.5)
        assert progress._bar.n == 4
        assert progress._bar.postfix == "loss=0.5"
    assert progress._bar.disable  # closed
    assert "encoding posts" in terminal.getvalue()
    assert lines(caplog) == []


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_interval_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(INTERVAL_VARIABLE, value)
    with pytest.raises(HarnessError, match=INTERVAL_VARIABLE):
        Progress(1, desc="x")


def test_durations_are_short() -> None:
    assert [format_duration(s) for s in (0.4, 12, 95, 7380)] == ["0s", "12s", "1m35s", "2h03m"]


def test_the_training_loop_logs_epoch_step_and_loss(piped: Pipe, caplog: pytest.LogCaptureFixture) -> None:
    torch = pytest.importorskip("torch")
    from toolkit.training import train_epochs

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    inputs, targets = torch.randn(12, 3), torch.randn(12)
    history = train_epochs(
        network=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        epochs=2,
        epoch_batches=lambda epoch: [slice(0, 4), slice(4, 8), slice(8, 12)],
        batch_loss=lambda rows: ((model(inputs[rows]).squeeze(1) - targets[rows]) ** 2).mean(),
        device="cpu",
        mixed_precision=False,
        label="toy",
    )
    steps = [line for line in lines(caplog) if line.startswith("toy epoch 2/2: ")]
    assert [line.split(", ")[0] for line in steps[:3]] == [
        f"toy epoch 2/2: {k}/3 batches (" + p for k, p in ((1, "33%)"), (2, "67%)"), (3, "100%)"))
    ]
    assert all(" batches/s" in line and ", loss=" in line for line in steps[:3])
    # the last step's running loss is the epoch's mean loss
    assert float(steps[2].rsplit("loss=", 1)[1]) == pytest.approx(history[1]["loss"], rel=1e-3)
    assert steps[3].startswith("toy epoch 2/2: mean loss ") and "batches/s" in steps[3]
