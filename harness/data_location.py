"""Where a run's data is: one dataset folder (`--data`) or a folder per split (`--train`, `--test`).

PAN distributes a corpus as separate training and test downloads; `--train DIR --test DIR` takes them as they
are, for the tasks whose splits are folders of their own (the PAN tasks: `harness.task.SplitFolders`). The
forum tasks cut one corpus by time and author, so they take `--data` only.

The location also names the dataset: `--name`, or the `--data` folder's name, or for `--train/--test` a short
name made from the two folders' names (PAN's `pan14-author-verification-test-corpus2-english-essays-2014-04-22` is
`pan14-english-essays`). Tables, figures and the run folder `<out>/<task>/<name>/<system>/seed-N` carry it, so the
same system on a second corpus gets a folder and a table of its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import DataError, HarnessError
from core.files import file_problem
from harness.task import SplitFolders

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
# words of PAN's folder names that say what every such folder is, not which corpus: left out of short names
_GENERIC_WORDS = {"author", "authorship", "verification", "training", "train", "test", "corpus", "corpus1",
                  "corpus2", "dataset"}  # fmt: skip
_DATE_PART = re.compile(r"\d{2}|\d{4}")
# a file the project's own format samples carry (samples/pan23-format-sample): their scores mean nothing
FORMAT_SAMPLE_MARKER = "FORMAT-SAMPLE"


@dataclass(frozen=True)
class DataLocation:
    """`data_dir` with `train/` and `test/` inside, or the two split folders given apiece."""

    data_dir: Path | None = None
    train_dir: Path | None = None
    test_dir: Path | None = None
    name: str | None = None  # the dataset's display name (`--name`); None: made from the folders' names

    def __post_init__(self) -> None:
        apiece = (self.train_dir is not None, self.test_dir is not None)
        if self.data_dir is not None and any(apiece):
            raise HarnessError("give either --data DIR or --train DIR --test DIR, not both")
        if self.data_dir is None and not all(apiece):
            missing = "--test" if apiece[0] else "--train" if apiece[1] else "--data (or --train and --test)"
            raise HarnessError(f"missing {missing}")
        for folder in (self.data_dir, self.train_dir, self.test_dir):
            # a symlink loop or a broken link: said as what it is (resolving it for the run's name was a traceback)
            if folder is not None and os.path.lexists(folder) and not os.path.exists(folder):
                raise DataError(f"{file_problem(Path(folder))}; expected a data folder", path=folder)
        if self.name is not None and not _UNSAFE.sub("_", self.name).strip("._"):
            raise HarnessError(f"--name {self.name!r}: give a name with a letter or digit in it")

    @property
    def split_folders(self) -> bool:
        return self.data_dir is None

    def load(self, task: Any, split: str) -> Any:
        """The task's `split` ("train" or "test") from this location."""
        if not self.split_folders:
            return task.load(Path(self.data_dir), split)
        if not isinstance(task, SplitFolders):
            raise HarnessError(
                f"task {task.metadata.name} splits one corpus itself; give it the corpus with --data, "
                "not --train/--test"
            )
        return task.load_split(Path(self.train_dir if split == "train" else self.test_dir), split)

    def folders_read(self, *, split_folders: bool) -> list[Path]:
        """The folders a run reads its data from, resolved: the split folders (`split_folders`: the task reads
        `train/` and `test/`), or the corpus folder of a task that cuts one corpus itself. What is written inside
        one is read back as data (a PAN 2013-2015 corpus takes a run folder for a problem without unknown.txt)."""
        if self.split_folders:
            folders = [Path(self.train_dir), Path(self.test_dir)]
        elif split_folders:
            folders = [Path(self.data_dir) / "train", Path(self.data_dir) / "test"]
        else:
            folders = [Path(self.data_dir)]
        return [folder.resolve() for folder in folders if folder.is_dir()]

    @property
    def display_name(self) -> str:
        """The dataset's name in tables and figures: `name`, the `--data` folder's name, or a short one from the
        split folders' names (`dataset_name`)."""
        if self.name is not None:
            return self.name
        if not self.split_folders:
            return _own_name(Path(self.data_dir).resolve())
        return dataset_name(_split_folder_name(Path(self.train_dir)), _split_folder_name(Path(self.test_dir)))

    @property
    def label(self) -> str:
        """The run folder's name for this data: the display name made safe as one path part."""
        return _UNSAFE.sub("_", self.display_name).strip("._") or "data"

    @property
    def format_sample(self) -> bool:
        """Whether this is one of the project's format samples (a `FORMAT-SAMPLE` file in the data folder)."""
        folders = [self.data_dir] if not self.split_folders else [self.train_dir, self.test_dir]
        folders += [Path(folder).parent for folder in folders]
        return any((Path(folder) / FORMAT_SAMPLE_MARKER).is_file() for folder in folders)

    def record(self) -> dict[str, Any]:
        """The resolved folders, for result.json (and `format_sample: true` for the project's format samples)."""
        if not self.split_folders:
            folders: dict[str, Any] = {"dir": str(Path(self.data_dir).resolve())}
        else:
            folders = {"train_dir": str(Path(self.train_dir).resolve()), "test_dir": str(Path(self.test_dir).resolve())}
        folders["name"] = self.display_name
        return {**folders, "format_sample": True} if self.format_sample else folders


def recorded_name(record: Mapping[str, Any]) -> str:
    """The dataset's name in a result's `task.data` (what `record` wrote): its "name", or for results written
    before names were recorded the one its recorded folders give; "" where it records neither."""
    if isinstance(record.get("name"), str) and record["name"]:
        return record["name"]
    if isinstance(record.get("dir"), str):
        return _own_name(Path(record["dir"]))
    if isinstance(record.get("train_dir"), str) and isinstance(record.get("test_dir"), str):
        return dataset_name(Path(record["train_dir"]).name, Path(record["test_dir"]).name)
    return ""


def _own_name(folder: Path) -> str:
    return folder.name or "root"  # `--data /` has no name of its own


def _split_folder_name(folder: Path) -> str:
    """A split folder's name, or its parent's where its own holds only the words every split has (`essays/train`
    and `essays/test` are the dataset `essays`, not `train+test`, which every such dataset would share)."""
    folder = folder.resolve()
    return folder.name if _distinctive_words(folder.name) else _own_name(folder.parent)


def _distinctive_words(folder_name: str) -> list[str]:
    """The words of a folder's name that say which corpus it is: not those every PAN folder has, nor its date."""
    words = re.split(r"[-_ ]+", folder_name)
    return [w for w in words if w and w.lower() not in _GENERIC_WORDS and not _DATE_PART.fullmatch(w)]


def short_corpus_name(folder_name: str) -> str:
    """A corpus folder's name without the words every PAN folder has and without its date:
    `pan15-authorship-verification-training-dataset-english-2015-04-19` -> `pan15-english`. A name that would
    be left empty is kept whole."""
    return "-".join(_distinctive_words(folder_name)) or folder_name


def dataset_name(train_folder: str, test_folder: str) -> str:
    """The name of a dataset given as two split folders: their common short name, else `<train>+<test>`."""
    train, test = short_corpus_name(train_folder), short_corpus_name(test_folder)
    return train if train == test else f"{train}+{test}"
