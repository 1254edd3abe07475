"""Score the baselines (default: cngdist, tfidf, compressor) on the real PAN 2014 English test corpora.

Extracts `pan13-15-av-en.tar.gz` to a temporary folder, trains each system on a corpus's train split
and scores it on that corpus's test split with `PanClassicTask`, and prints a Markdown table.

- PAN14 essays and PAN14 novels: train = the training corpus; test = test corpus 2 (corpus 1 is a
  subset of it).
- PAN15 English: not scored here. The tarball holds only its training corpus; the 50/50 split of it
  that this script made shared a text between train and test in 37 of the 50 test problems, so its
  figures are withdrawn. `benchmarks/verification_pan.py` scores PAN15 by a text-disjoint 5-fold
  cross-validation (`toolkit.splits`), and PAN13 as well.

    python benchmarks/baselines_pan1415.py [--data PATH/pan13-15-av-en.tar.gz] [--seed 0] [--systems NAME,...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from core.records import VerificationData
from harness.registry import system_class
from harness.seeding import seed_everything
from tasks.pan.classic import PanClassicTask

REPO_ROOT = Path(__file__).resolve().parents[1]
TARBALL = "pan13-15-av-en.tar.gz"

# corpus label -> (folder name, train folder pattern, test folder pattern); patterns are relative to the
# tarball root. PAN15 (no test corpus in the tarball) is scored by benchmarks/verification_pan.py.
CORPORA: dict[str, tuple[str, str, str]] = {
    "PAN14 essays": (
        "pan14-essays",
        "train/pan14-*/pan14-*-training-corpus-english-essays-*",
        "test/pan14-*/pan14-*-test-corpus2-english-essays-*",
    ),
    "PAN14 novels": (
        "pan14-novels",
        "train/pan14-*/pan14-*-training-corpus-english-novels-*",
        "test/pan14-*/pan14-*-test-corpus2-english-novels-*",
    ),
}

COLUMNS = ("auc", "c_at_1", "auc_x_c_at_1", "f_05_u", "f1", "brier", "overall")
HEADER = (
    "| corpus | system | n_test | AUC | c@1 | AUC x c@1 | F0.5u | F1 | Brier | overall | fit s | predict s |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def default_tarball() -> Path:
    shared = Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    return shared / TARBALL


def only_match(root: Path, pattern: str) -> Path:
    matches = sorted(p for p in root.glob(pattern) if p.is_dir())
    if len(matches) != 1:
        raise SystemExit(f"{root}: expected one folder matching {pattern!r}, found {[str(m) for m in matches]}")
    return matches[0]


def prepare(root: Path, work: Path) -> dict[str, tuple[Path, str]]:
    """One data folder (with train/ and test/) per corpus, and a note on its splits."""
    prepared: dict[str, tuple[Path, str]] = {}
    for label, (slug, train_pattern, test_pattern) in CORPORA.items():
        target = work / slug
        train_dir = only_match(root, train_pattern)
        test_dir = only_match(root, test_pattern)
        target.mkdir(parents=True)
        (target / "train").symlink_to(train_dir, target_is_directory=True)
        (target / "test").symlink_to(test_dir, target_is_directory=True)
        prepared[label] = (target, f"train {train_dir.name}, test {test_dir.name}")
    return prepared


def run_one(name: str, train: VerificationData, test: VerificationData, task: PanClassicTask, seed: int) -> str:
    seed_everything(seed)
    system = system_class(name)()
    start = time.perf_counter()
    system.fit(train, seed=seed)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    answers = system.predict(test.problems)
    predict_s = time.perf_counter() - start
    scores = task.score(answers, test)
    cells = " | ".join(f"{scores[c]:.3f}" for c in COLUMNS)
    return f"| {{corpus}} | {name} | {len(test.problems)} | {cells} | {fit_s:.1f} | {predict_s:.1f} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_tarball(), help=f"path to {TARBALL}")
    parser.add_argument("--seed", type=int, default=0, help="seed of the systems")
    parser.add_argument("--systems", default="cngdist,tfidf,compressor", help="comma-separated registry names")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"{args.data}: not found (set HARNESS_SHARED_DATA or pass --data)")
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    task = PanClassicTask()
    with tempfile.TemporaryDirectory(prefix="pan1415-") as tmp:
        root = Path(tmp) / "extracted"
        with tarfile.open(args.data) as archive:
            archive.extractall(root, filter="data")
        rows, notes = [], []
        for label, (folder, note) in prepare(root, Path(tmp) / "corpora").items():
            train, test = task.load(folder, "train"), task.load(folder, "test")
            notes.append(f"- {label}: {len(train.problems)} train / {len(test.problems)} test problems; {note}")
            for name in names:
                rows.append(run_one(name, train, test, task, args.seed).format(corpus=label))
                print(rows[-1], file=sys.stderr, flush=True)
    print(HEADER)
    print("\n".join(rows))
    print()
    print("\n".join(notes))
    print(f"- systems with default parameters, seed {args.seed}; times in seconds (fit includes feature extraction)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
