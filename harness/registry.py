"""Names of tasks, systems and measures, mapped to import paths (imported only when used).

Keeping import paths rather than classes keeps `harness --help` and `harness list` fast:
no system's heavy dependencies (torch, transformers) are imported to list them.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

from harness.errors import HarnessError


class Entry(NamedTuple):
    target: str  # "module:attribute"
    description: str


TASKS: dict[str, Entry] = {
    "pan23": Entry(
        "tasks.pan.task:Pan23Task",
        "PAN 2020-2023 authorship verification (pairs.jsonl + truth.jsonl); main score overall",
    ),
    "pan-classic": Entry(
        "tasks.pan.task:PanClassicTask",
        "PAN 2013-2015 authorship verification (problem folders + truth.txt); main score AUC x c@1",
    ),
    "darkweb": Entry(
        "tasks.darkweb:DarkwebTask",
        "forum author retrieval over post episodes, time split per market, plus migrant linking; main score MRR",
    ),
    "reddit": Entry(
        "tasks.reddit.task:RedditTask",
        "account ranking (MRR, R@k) and linking (EER, minDCF) on post streams split by author and time; main score EER",
    ),
}

SYSTEMS: dict[str, Entry] = {
    "cngdist": Entry(
        "systems.baselines.cngdist:CharNgramDistance",
        "PAN baseline: TF-IDF of character 4-grams, cosine, abstain band tuned on train",
    ),
    "compressor": Entry(
        "systems.baselines.compressor:CompressorBaseline",
        "PAN baseline: PPMd cross-entropy of each text given the other, logistic regression",
    ),
    "tfidf": Entry(
        "systems.baselines.tfidf:WordTfidf",
        "word TF-IDF cosine with the same calibration as cngdist",
    ),
    "siamese_bilstm": Entry(
        "systems.siamese_bilstm.system:SiameseBiLSTM",
        "BERT-BiLSTM Siamese ensemble (PAN 2023): frozen encoder layer-CLS -> Bi-LSTM, contrastive loss, routing",
    ),
    "nbcsauthor": Entry(
        "systems.nbcsauthor.system:EpisodeAuthor",
        "SYSML episode encoder (BPE CNN, time, metapath2vec sub-forum, transformer) trained with NBC-Softmax",
    ),
    "sysml": Entry(
        "systems.nbcsauthor.system:SYSML",
        "SYSML episode encoder trained with softmax (--param loss=cosface|arcface|multi_similarity|contrastive)",
    ),
    "episode_cnn": Entry(
        "systems.nbcsauthor.system:EpisodeCNN",
        "darkweb baseline: the SYSML CNN with time and sub-forum, mean pooling instead of the transformer",
    ),
    "episode_tfidf": Entry(
        "systems.nbcsauthor.tfidf:EpisodeTfidf",
        "darkweb baseline: word TF-IDF of an episode's posts, cosine",
    ),
    "varlen_linker": Entry(
        "systems.varlen_linker.system:VarlenLinker",
        "Khan et al. 2021: conv post encoder + attention over variable-size samples (Beta(3,1) sizes), triplet loss",
    ),
    "iur_fixed": Entry(
        "systems.varlen_linker.system:IurFixed",
        "reddit baseline: the varlen_linker encoder trained on fixed 16-post samples; groups of 16 averaged",
    ),
    "varlen_avg": Entry(
        "systems.varlen_linker.system:VarlenAvg",
        "reddit baseline (Avg): the varlen_linker encoder trained on single posts; post embeddings averaged",
    ),
    "reddit_tfidf": Entry(
        "systems.varlen_linker.tfidf:RedditTfidf",
        "reddit baseline: word TF-IDF of a sample's concatenated text, cosine",
    ),
}

MEASURES: dict[str, str] = {
    "auc": "area under the ROC curve (PAN: non-answers count as 0.5)",
    "c_at_1": "accuracy that rewards abstaining (0.5) over wrong answers (Penas & Rodrigo 2011)",
    "f1": "F1 of the same-author class over answered problems",
    "f_05_u": "F0.5u: F0.5 with non-answers counted as false negatives (Bevendorff et al. 2019)",
    "brier": "1 - Brier loss of the scores (PAN 2021-2023)",
    "overall": "mean of the profile's verification measures (pan20: 4, pan23: 5)",
    "auc_x_c_at_1": "AUC x c@1, the PAN 2014-2015 ranking score",
    "mrr": "mean reciprocal rank of the first same-author item",
    "recall_at_k": "share of queries with a same-author item among the top k (R@k)",
    "eer": "equal error rate (nearest-point and interpolated variants)",
    "min_dcf": "minimum detection cost over thresholds, with p_target, c_miss, c_fa recorded",
}


def load(entry_point: str) -> Any:
    """Import "module:attribute" and return the attribute."""
    module_name, _, attribute = entry_point.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute)


def _lookup(table: dict[str, Entry], kind: str, name: str) -> Any:
    if name not in table:
        known = ", ".join(sorted(table))
        raise HarnessError(f"unknown {kind} {name!r}; known {kind}s: {known}")
    return load(table[name].target)


def task_class(name: str) -> Any:
    return _lookup(TASKS, "task", name)


def system_class(name: str) -> Any:
    return _lookup(SYSTEMS, "system", name)
