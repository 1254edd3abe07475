"""Names of tasks, systems and converters, mapped to import paths (imported only when used).

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
        "tasks.pan.pan23:Pan23Task",
        "PAN 2020-2023 authorship verification (pairs.jsonl + truth.jsonl); main score overall",
    ),
    "pan-classic": Entry(
        "tasks.pan.classic:PanClassicTask",
        "PAN 2013-2015 authorship verification (problem folders + truth.txt); main score AUC x c@1",
    ),
    "pan20": Entry(
        "tasks.pan.pan20:Pan20Task",
        "PAN 2020-2021 authorship verification (pairs.jsonl + truth.jsonl), PAN 2020 evaluator; main score overall",
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

# `harness convert --from NAME`: "module:function" turning a dataset folder into another task's layout,
# called as function(src, dst, overwrite=...) -> number of problems converted
CONVERTERS: dict[str, Entry] = {
    "pan-classic": Entry(
        "tasks.pan.convert:convert_classic_to_jsonl",
        "PAN 2013-2015 corpus folder (problem folders + truth.txt) -> pairs.jsonl + truth.jsonl (pan23 layout)",
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
    "length_ratio": Entry(
        "systems.baselines.length_ratio:LengthRatio",
        "sanity floor: ratio of the texts' lengths (shorter / longer), abstain band tuned on train",
    ),
    "unmasking": Entry(
        "systems.unmasking:Unmasking",
        "Koppel & Schler 2004: degradation curves of known-vs-unknown chunk SVMs, logistic regression over curves",
    ),
    "pair_features": Entry(
        "systems.pair_features:PairFeatures",
        "after Frery et al. 2014 (PAN14 essays winner): pair similarity features, CART tree (--param trees=N: forest)",
    ),
    "impostors": Entry(
        "systems.impostors:GeneralImpostors",
        "General Impostors (Koppel & Winter 2014; Seidman 2013): random feature subsets, training texts as impostors",
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
        "systems.baselines.forum_tfidf:EpisodeTfidf",
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
        "systems.baselines.forum_tfidf:RedditTfidf",
        "reddit baseline: word TF-IDF of a sample's concatenated text, cosine",
    ),
    "episode_fusion": Entry(
        "systems.forum_fusion.system:EpisodeFusion",
        "darkweb: learned weights (listwise, training split) of word and char TF-IDF, sub-forum and weekday cosines",
    ),
    "reddit_fusion": Entry(
        "systems.forum_fusion.system:RedditFusion",
        "reddit: learned weights (listwise, training split) of word and char TF-IDF, subreddit and hour cosines",
    ),
    "episode_encoder": Entry(
        "systems.forum_encoder.system:EpisodeEncoder",
        "darkweb: MiniLM (or a local HF model) post vectors, mean over an episode, projection trained by triplet loss",
    ),
    "reddit_encoder": Entry(
        "systems.forum_encoder.system:RedditEncoder",
        "reddit: MiniLM (or a local HF model) post vectors, mean over a sample, projection trained by triplet loss",
    ),
    "stacked": Entry(
        "systems.stacked:StackedEnsemble",
        "after PAN14's meta-classifier: logistic regression over members' out-of-fold answers (--param members=a,b)",
    ),
    "char_lm": Entry(
        "systems.char_lm.system:CharLM",
        "Bagnall 2015: shared character GRU, one softmax head per author, relative cross-entropy (preset=paper)",
    ),
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


def converter(name: str) -> Any:
    return _lookup(CONVERTERS, "converter", name)
