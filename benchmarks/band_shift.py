"""Where a cross-fitting verifier's band meets the test scores (issue 27, items 1 and 6; a diagnosis).

Every cross-fitting verifier fits its abstain band on out-of-fold scores of the training problems, then cuts the
test problems' scores with it. If the two sets of scores lie apart, a band placed well for the first answers one
class on the second, whatever measure chose it. For each (set, system, seed) this script fits the system on the
set's training split (its parameters as given) and prints, for the out-of-fold training scores and for the test
scores: each class's median, the AUC, and the share of problems the band answers "same", "different" or not at all.

    python benchmarks/band_shift.py --set WORK/sets/cmcc-seed0 --seed 0 --system tfidf \
        --system wccn:calibration_by=authors
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from core.errors import HarnessError  # noqa: E402
from core.records import VerificationData  # noqa: E402
from harness.metrics.verification import auc  # noqa: E402
from harness.params import build, parse_cli  # noqa: E402
from harness.registry import system_class  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402
from toolkit.calibration import AbstainBand  # noqa: E402


def parse_system(spec: str) -> tuple[str, dict[str, Any]]:
    """ "name" or "name:key=value,key=value", the values typed as `harness run --param` types them."""
    name, _, rest = spec.partition(":")
    pairs: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise HarnessError(f"--system {spec!r}: {item!r} is not key=value")
        pairs[key] = value
    return name, parse_cli(system_class(name), pairs)


def side(scores: np.ndarray, labels: np.ndarray, band: AbstainBand) -> dict[str, float]:
    """Each class's median score, the AUC, and the shares of answers the band gives these scores."""
    answers = band.apply(scores)
    return {
        "median_same": float(np.median(scores[labels])),
        "median_different": float(np.median(scores[~labels])),
        "auc": float(auc(labels.astype(int), scores)),
        "answered_same": float(np.mean(answers > 0.5)),
        "answered_different": float(np.mean(answers < 0.5)),
        "unanswered": float(np.mean(answers == 0.5)),
    }


class Fitted(NamedTuple):
    """A system fitted on a training split: its out-of-fold training scores (what its band was fitted on) and its
    test scores (what the band cuts), each with the truth."""

    system: Any
    training_scores: np.ndarray
    training_labels: np.ndarray
    test_scores: np.ndarray
    test_labels: np.ndarray


def fit_and_score(
    train: VerificationData, test: VerificationData, name: str, params: Mapping[str, Any], *, seed: int
) -> Fitted:
    """Fit `name` with `params` on `train`; the scores its band was fitted on, and its scores of `test`."""
    assert train.truth is not None and test.truth is not None
    system = build(system_class(name), params)  # unknown names and bad values refused as `harness run` does
    system.fit(train, seed=seed)
    band_fit = system.answering_band_fit()  # refused for a verifier with several bands (siamese_bilstm)
    test_labels = np.array([test.truth[p.id].same for p in test.problems], dtype=bool)
    return Fitted(system, band_fit.scores, band_fit.labels, system.scores(test.problems), test_labels)


def band_shift(
    train: VerificationData, test: VerificationData, name: str, params: Mapping[str, Any], *, seed: int
) -> dict[str, Any]:
    """The band of `name` fitted on `train`, and `side` of its out-of-fold training scores and of the test scores."""
    fitted = fit_and_score(train, test, name, params, seed=seed)
    band = fitted.system.band
    return {
        "system": name,
        "params": dict(params),
        "seed": seed,
        "band": [band.p1, band.p2],
        "training_out_of_fold": side(np.clip(fitted.training_scores, 0.0, 1.0), fitted.training_labels, band),
        "test": side(np.clip(fitted.test_scores, 0.0, 1.0), fitted.test_labels, band),
    }


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    lines = [
        "| system | seed | band | median same / different (out of fold) | (test) | AUC out of fold / test "
        "| same / different / none (out of fold) | (test) |",
        "|---|---:|---|---|---|---|---|---|",
    ]
    for row in rows:
        oof, test = row["training_out_of_fold"], row["test"]
        label = row["system"] + "".join(f", {k}={v}" for k, v in row["params"].items())

        def shares(s: Mapping[str, float]) -> str:
            return f"{s['answered_same']:.2f} / {s['answered_different']:.2f} / {s['unanswered']:.2f}"

        lines.append(
            f"| {label} | {row['seed']} | {row['band'][0]:.2f}-{row['band'][1]:.2f} "
            f"| {oof['median_same']:.3f} / {oof['median_different']:.3f} "
            f"| {test['median_same']:.3f} / {test['median_different']:.3f} "
            f"| {oof['auc']:.3f} / {test['auc']:.3f} | {shares(oof)} | {shares(test)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, action="append", required=True, help="a pan23 set (repeatable)")
    parser.add_argument("--seed", type=int, action="append", required=True, help="its seed (one per --set)")
    parser.add_argument("--system", action="append", required=True, help="NAME or NAME:KEY=VALUE,... (repeatable)")
    args = parser.parse_args()
    if len(args.set) != len(args.seed):
        parser.error("give one --seed for each --set")
    systems = [parse_system(spec) for spec in args.system]
    rows = []
    for folder, seed in zip(args.set, args.seed, strict=True):
        task = Pan23Task()
        train, test = task.load(folder, "train"), task.load(folder, "test")
        for name, params in systems:
            row = {"set": folder.name, **band_shift(train, test, name, params, seed=seed)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(table(rows))


if __name__ == "__main__":
    main()
