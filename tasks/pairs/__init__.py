"""`harness pairs`: PAN 2020-2023 verification datasets built from real corpora (forum posts, PAN 2013-2015
corpora, folders of texts, JSONL), with the rules that keep them honest (see builder.py)."""

from tasks.pairs.dataset import SOURCES, build_pairs
from tasks.pairs.manifest import Manifest

__all__ = ["SOURCES", "Manifest", "build_pairs"]
