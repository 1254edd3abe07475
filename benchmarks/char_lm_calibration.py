"""char_lm's calibration on the real PAN 2013-2015 corpora: the c@1 each answer rule gets beside the best band's.

Issue 27, item 6. char_lm's ranking (AUC) is at the PAN15 winner's level; its c@1 is not, because the answer
rule (a logistic map of the relative cross-entropy d, then an abstain band) is fitted on the training problems
and loses on the test problems what a band chosen on them would keep. This script keeps the raw d of every
training and test problem, so that answer rules can be compared on the same scores without retraining:

    python benchmarks/char_lm_calibration.py scores --corpora pan15 --seeds 0,1 --out runs/char-lm-calibration
    python benchmarks/char_lm_calibration.py compare --out runs/char-lm-calibration
    python benchmarks/char_lm_calibration.py compare --out runs/char-lm-calibration --ensemble

`scores` fits char_lm (defaults, one CPU thread) on each fold or split exactly as `verification_pan.py` builds
them (PAN15: text-disjoint 5-fold CV over its 100 training problems, fold seed 0; PAN14 and PAN13: PAN's own
train/test) and writes `<corpus>-seed<S>.json`: per fold, the training d and truth and the test d and truth.
`compare` scores each answer rule of `ANSWER_RULES` (below) on the test problems, fold mean and pooled,
beside the c@1 of the best band on the test answers (an upper bound chosen on the truth it is scored on) and that
bound's optimism (`bound_optimism`: how far a band chosen on the problems' truth lies, on average, above what the
same choice gives on other problems like them).
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.verification_pan import CORPORA, TARBALLS, default_data_dir, prepare  # noqa: E402
from core.records import Answer  # noqa: E402
from tasks.pan.classic import PanClassicTask  # noqa: E402
from toolkit.calibration import AbstainBand, fit_abstain_band, objective_function, training_labels  # noqa: E402


def fold_scores(folder: Path, seed: int) -> dict[str, Any]:
    """Fit char_lm on `folder/train`; the training d (what its map and band were fitted on) and the test d."""
    from systems.char_lm.system import CharLM

    task = PanClassicTask()
    train, test = task.load(folder, "train"), task.load(folder, "test")
    system = CharLM(cpu_threads=1)
    system.fit(train, seed=seed)
    test_d = system.raw_scores(test.problems)
    answers = system.calibrate(test_d)
    return {
        "fold": folder.name,
        "train_d": [float(v) for v in system.training_scores],
        "train_same": training_labels(train).tolist(),
        "test_ids": [p.id for p in test.problems],
        "test_d": [float(v) for v in test_d],
        "test_same": training_labels(test).tolist(),
        "answers": [float(v) for v in answers],
        "platt": list(system._platt),
        "band": list(system.band),
        "scores": task.score([Answer(p.id, float(v)) for p, v in zip(test.problems, answers, strict=True)], test),
    }


def collect(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="char-lm-calibration-") as tmp:
        root = Path(tmp) / "extracted"
        for name in TARBALLS:
            with tarfile.open(args.data_dir / name) as archive:
                archive.extractall(root / name.split(".")[0], filter="data")
        for key in args.corpora.split(","):
            folders = prepare(key, root, Path(tmp) / "corpora", 5, 0)
            for seed in (int(s) for s in args.seeds.split(",")):
                target = args.out / f"{key}-seed{seed}.json"
                if target.exists():
                    print(f"{target}: exists, kept", file=sys.stderr)
                    continue
                folds = []
                for folder in folders:
                    folds.append(fold_scores(folder, seed))
                    print(f"{key} seed {seed} {folder.name}: {folds[-1]['scores']}", file=sys.stderr, flush=True)
                partial = target.with_suffix(".partial")
                partial.write_text(json.dumps({"corpus": key, "seed": seed, "folds": folds}), encoding="utf-8")
                partial.replace(target)
    return 0


def logistic(d: np.ndarray, same: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """char_lm's probability map, fitted on the training d by char_lm's own `fit_logistic_map`."""
    from systems.char_lm.system import fit_logistic_map

    a, b = fit_logistic_map(d, same)
    return lambda x: 1.0 / (1.0 + np.exp(-(a * x + b)))


def grid_band(objective: str) -> AnswerRule:
    """The logistic map, then the abstain band grid-searched for `objective` on the training problems."""

    def rule(d: np.ndarray, same: np.ndarray, profile: str) -> Callable[[np.ndarray], np.ndarray]:
        probability = logistic(d, same)
        band = fit_abstain_band(probability(d), same, objective=objective, profile=profile)
        return lambda x: band.apply(probability(x))

    return rule


def bagged_band(d: np.ndarray, same: np.ndarray, profile: str, repeats: int = 50) -> Callable[[np.ndarray], np.ndarray]:
    """The median band over bootstrap resamples of the training problems: fewer thresholds fitted to noise."""
    probability = logistic(d, same)
    p, rng, bands = probability(d), np.random.default_rng(0), []
    while len(bands) < repeats:
        draw = rng.integers(0, len(d), len(d))
        if same[draw].all() or not same[draw].any():
            continue
        bands.append(fit_abstain_band(p[draw], same[draw], objective=MAIN, profile=profile))
    p1, p2 = float(np.median([b.p1 for b in bands])), float(np.median([b.p2 for b in bands]))
    return lambda x: AbstainBand(p1, max(p1, p2)).apply(probability(x))


def expected_c_at_1(d: np.ndarray, same: np.ndarray, profile: str) -> Callable[[np.ndarray], np.ndarray]:
    """No band search: leave unanswered the problems the logistic map is least sure of, as many as maximise the
    c@1 the map itself expects on the training problems (c@1 = (n_c + n_u n_c / n) / n, n_c its expected count)."""
    probability = logistic(d, same)
    sure = np.sort(np.maximum(probability(d), 1.0 - probability(d)))
    n, best = len(sure), (-1.0, 0.5)
    for left_out in range(n):
        correct = sure[left_out:].sum()
        expected = (correct + left_out * correct / n) / n
        cut = 0.5 if left_out == 0 else float((sure[left_out - 1] + sure[left_out]) / 2)
        best = max(best, (expected, cut))
    cut = best[1]

    def answer(x: np.ndarray) -> np.ndarray:
        p = probability(x)
        return np.where(np.maximum(p, 1.0 - p) <= cut, 0.5, np.clip(p, 0.0, 1.0))

    return answer


def quantile_band(d: np.ndarray, same: np.ndarray, profile: str) -> Callable[[np.ndarray], np.ndarray]:
    """Transductive (as Bagnall placed his band on the test scores): the default band's cut points carried to
    the test problems as quantiles of their own, unlabelled scores. Assumes the test classes are balanced as
    the training ones are; a problem's answer then depends on the other test problems."""
    p = logistic(d, same)(d)
    band = fit_abstain_band(p, same, objective=MAIN, profile=profile)
    q1, q2 = float(np.mean(p <= band.p1)), float(np.mean(p < band.p2))

    def answer(x: np.ndarray) -> np.ndarray:
        low, high = np.quantile(x, q1), np.quantile(x, q2)
        spread = (x - x.min()) / (np.ptp(x) or 1.0)  # keeps the order outside the band
        return np.where(x <= low, 0.49 * spread, np.where(x >= high, 0.51 + 0.49 * spread, 0.5))

    return answer


def symmetric_band(objective: str) -> AnswerRule:
    """The logistic map, then a band centred on its 0.5, [0.5 - w, 0.5 + w], one width w grid-searched for
    `objective` on the training problems (ties: the narrowest): one threshold fitted instead of two, so less of
    the training problems' noise is carried to the test answers."""

    def rule(d: np.ndarray, same: np.ndarray, profile: str) -> Callable[[np.ndarray], np.ndarray]:
        probability = logistic(d, same)
        p, measure = probability(d), objective_function(objective, profile=profile)
        widths = np.round(np.arange(0.0, 0.5, 0.01), 2)
        values = [measure(same, AbstainBand(0.5 - w, 0.5 + w).apply(p)) for w in widths]
        w = float(widths[int(np.argmax(values))])  # argmax takes the first best: the narrowest
        return lambda x: AbstainBand(0.5 - w, 0.5 + w).apply(probability(x))

    return rule


def no_band(d: np.ndarray, same: np.ndarray, profile: str) -> Callable[[np.ndarray], np.ndarray]:
    """The logistic map's probabilities answered as they are: what abstention adds to the other rules."""
    probability = logistic(d, same)
    return lambda x: np.clip(probability(x), 0.0, 1.0)


MAIN = "auc_x_c_at_1"  # PAN 2013-2015's ranking, the band objective char_lm's "task" setting takes on these corpora
AnswerRule = Callable[[np.ndarray, np.ndarray, str], Callable[[np.ndarray], np.ndarray]]
ANSWER_RULES: dict[str, AnswerRule] = {
    "band for AUC x c@1 (char_lm's default)": grid_band(MAIN),
    "band for c@1": grid_band("c_at_1"),
    "median band of 50 bootstraps": bagged_band,
    "expected c@1 of the logistic map": expected_c_at_1,
    "quantile band (transductive)": quantile_band,
    "symmetric band for AUC x c@1 (one width)": symmetric_band(MAIN),
    "symmetric band for c@1 (one width)": symmetric_band("c_at_1"),
    "no band": no_band,
}


def ensemble_runs(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """Per corpus, the kept runs of all its seeds as one run whose d is each problem's mean d over the seeds'
    networks: an ensemble of differently seeded networks, as Bagnall averaged his (same folds, same problems)."""
    by_corpus: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        run = json.loads(path.read_text(encoding="utf-8"))
        by_corpus.setdefault(run["corpus"], []).append(run)
    merged = {}
    for corpus, runs in by_corpus.items():
        if len(runs) < 2:
            continue
        folds = []
        for parts in zip(*(run["folds"] for run in runs), strict=True):
            if any(part["test_ids"] != parts[0]["test_ids"] for part in parts):
                raise SystemExit(f"{corpus}: the seeds' folds hold other problems; cannot average them")
            fold = dict(parts[0], answers=None)
            for key in ("train_d", "test_d"):
                fold[key] = np.mean([part[key] for part in parts], axis=0).tolist()
            folds.append(fold)
        merged[f"{corpus}, d averaged over the networks of seeds {sorted(r['seed'] for r in runs)}"] = {"folds": folds}
    return merged


def c_at_1_of_cuts(truth: np.ndarray, answers: np.ndarray, a: float, b: float) -> float:
    """c@1 of the band with cuts (a, b) on these answers (0.5 stays unanswered)."""
    answered = answers != 0.5
    correct = np.count_nonzero(answered & (((answers < a) & ~truth) | ((answers >= b) & truth)))
    unanswered = np.count_nonzero(~answered | ((answers >= a) & (answers < b)))
    n = answers.size
    return float((correct + unanswered * correct / n) / n)


def bound_optimism(truth: np.ndarray, answers: np.ndarray, repeats: int = 500, seed: int = 0) -> float:
    """How far the best band's c@1 lies above what that band choice gives on other problems (Efron's bootstrap
    estimate of optimism): the mean over resamples of the best band's c@1 on the resample less its c@1 on the
    problems themselves. The best band is chosen on the truth it is scored on, so even a rule that knew the
    test distribution exactly would, on average, fall this far below it."""
    from harness.metrics.verification import best_band_cuts

    rng = np.random.default_rng(seed)
    gaps = []
    for _ in range(repeats):
        draw = rng.integers(0, truth.size, truth.size)
        value, a, b = best_band_cuts(truth[draw], answers[draw])
        gaps.append(value - c_at_1_of_cuts(truth, answers, a, b))
    return float(np.mean(gaps))


def compare(args: argparse.Namespace) -> int:
    """A table per kept file: each rule's test measures, fold mean and pooled (all folds' answers together)."""
    from harness.metrics.verification import auc, c_at_1, c_at_1_best_band

    paths = sorted(args.out.glob("*-seed*.json"))
    runs = {path.name: json.loads(path.read_text(encoding="utf-8")) for path in paths}
    if args.ensemble:
        runs = ensemble_runs(paths)
    # (corpus, rule) -> per seed: pooled c@1, its best band, the bound's optimism, AUC x c@1 (fold mean)
    over_seeds: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    for label, run in runs.items():
        folds = run["folds"]
        print(f"\n{label}: {len(folds)} fold(s), {sum(len(f['test_d']) for f in folds)} test problems")
        print(
            "| rule | AUC x c@1 (fold mean) | c@1 (fold mean) | c@1 (pooled) | c@1 best band (pooled) "
            "| its optimism | unanswered |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, rule in ANSWER_RULES.items():
            answers, truths = [], []
            for fold in folds:
                answer = rule(np.array(fold["train_d"]), np.array(fold["train_same"], dtype=bool), "pan23")
                answers.append(answer(np.array(fold["test_d"])))
                truths.append(np.array(fold["test_same"], dtype=bool))
            if name.startswith("band for AUC x c@1") and not args.ensemble:  # it reproduces what char_lm answered
                np.testing.assert_allclose(np.concatenate(answers), [v for f in folds for v in f["answers"]])
            main = [auc(t, a) * c_at_1(t, a) for t, a in zip(truths, answers, strict=True)]
            first = [c_at_1(t, a) for t, a in zip(truths, answers, strict=True)]
            pooled, truth = np.concatenate(answers), np.concatenate(truths)
            first_pooled = c_at_1(truth, pooled)
            bound, optimism = c_at_1_best_band(truth, pooled), bound_optimism(truth, pooled)
            print(
                f"| {name} | {np.mean(main):.3f} | {np.mean(first):.3f} | {first_pooled:.3f} | "
                f"{bound:.3f} | {optimism:.3f} | {int(np.sum(pooled == 0.5))} |"
            )
            if "corpus" in run:  # an --ensemble run merges the seeds: no table over seeds
                over_seeds.setdefault((run["corpus"], name), []).append(
                    (first_pooled, bound, optimism, float(np.mean(main)))
                )
    print_over_seeds(over_seeds)
    return 0


def print_over_seeds(over_seeds: dict[tuple[str, str], list[tuple[float, float, float, float]]]) -> None:
    """Per corpus with two or more kept seeds, each rule's mean +- sd over them: the gap to the best band, and the
    gap left once the bound's optimism is taken off it (the issue's bar: pooled c@1 within 0.01 of the band)."""

    def cell(values: np.ndarray) -> str:
        return f"{values.mean():.3f} ± {values.std(ddof=1):.3f}"

    for corpus in sorted({c for c, _ in over_seeds}):
        rows = {name: np.array(v) for (c, name), v in over_seeds.items() if c == corpus}
        seeds = len(next(iter(rows.values())))
        if seeds < 2:
            continue
        print(f"\n{corpus}, {seeds} seeds (mean ± sd over them)")
        print("| rule | c@1 (pooled) | best band | gap | gap less its optimism | AUC x c@1 (fold mean) |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, v in rows.items():
            gap = v[:, 1] - v[:, 0]
            print(
                f"| {name} | {cell(v[:, 0])} | {cell(v[:, 1])} | {cell(gap)} | {cell(gap - v[:, 2])} "
                f"| {cell(v[:, 3])} |"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    scores = commands.add_parser("scores", help="fit char_lm per fold and keep the training and test d")
    scores.add_argument("--data-dir", type=Path, default=default_data_dir(), help=f"folder holding {TARBALLS}")
    scores.add_argument("--corpora", default="pan15", help=f"comma-separated: {', '.join(CORPORA)}")
    scores.add_argument("--seeds", default="0")
    scores.add_argument("--out", type=Path, required=True)
    rules = commands.add_parser("compare", help="each answer rule's test c@1 on the kept scores")
    rules.add_argument("--out", type=Path, required=True)
    rules.add_argument("--ensemble", action="store_true", help="average each problem's d over the kept seeds first")
    args = parser.parse_args(argv)
    return collect(args) if args.command == "scores" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
