"""Names of tasks, systems and converters, mapped to import paths (imported only when used).

Keeping import paths rather than classes keeps `harness --help` and `harness list` fast:
no system's heavy dependencies (torch, transformers) are imported to list them. For the same reason
the entries declare what the CLI checks before it imports anything: the kind of data a task gives
(`data_kind`), the data kinds a system serves (`serves`), and which tasks have PAN answer files (`pan_answers`),
so that a system that does not fit a task, or `predict`/`score` on a task without PAN answers, is
refused at once with the combinations that exist.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

from core.errors import HarnessError


class Entry(NamedTuple):
    target: str  # "module:attribute"
    description: str
    # a task's: the kind of data it gives its systems (a key of DATA_KINDS); whether it has PAN answer files,
    # the ones `harness predict` and `harness score` read and write (harness.task.PanAnswers)
    data_kind: str = ""
    pan_answers: bool = False
    # a task's: whether its splits are folders of their own, so `harness run --train DIR --test DIR` can name
    # them apiece (harness.task.SplitFolders); the others cut one corpus into splits themselves
    split_folders: bool = False
    # a system's: the data kinds it fits on and answers (empty: not declared, never refused)
    serves: tuple[str, ...] = ()
    # a system's: the pip extra it needs beyond the base install ("neural": torch and transformers), "" for none
    extra: str = ""


# What a task gives a system to fit on and answer; a system declares the data kinds it serves, so that
# `harness run` and `harness predict` refuse a system that does not fit a task before loading anything. Not to be
# confused with `TaskMetadata.kind` (verification, retrieval, linking): how a task is scored, recorded in result.json.
DATA_KINDS: dict[str, str] = {
    "verification": "PAN verification problems (known and unknown texts)",
    "episodes": "darkweb episodes of forum posts",
    "post-streams": "reddit post streams",
}
VERIFICATION = ("verification",)
EPISODES = ("episodes",)
POST_STREAMS = ("post-streams",)
FORUM = ("episodes", "post-streams")  # the systems that read a sample's posts only (tasks.forum.records)


TASKS: dict[str, Entry] = {
    "pan23": Entry(
        "tasks.pan.pan23:Pan23Task",
        "PAN 2020-2023 authorship verification (pairs.jsonl + truth.jsonl); main score overall",
        data_kind="verification",
        pan_answers=True,
        split_folders=True,
    ),
    "pan-classic": Entry(
        "tasks.pan.classic:PanClassicTask",
        "PAN 2013-2015 authorship verification (problem folders + truth.txt); main score AUC x c@1",
        data_kind="verification",
        pan_answers=True,
        split_folders=True,
    ),
    "pan20": Entry(
        "tasks.pan.pan20:Pan20Task",
        "PAN 2020-2021 authorship verification (pairs.jsonl + truth.jsonl), PAN 2020 evaluator; main score overall",
        data_kind="verification",
        pan_answers=True,
        split_folders=True,
    ),
    "darkweb": Entry(
        "tasks.darkweb:DarkwebTask",
        "forum author retrieval over post episodes, time split per market, plus migrant linking; main score MRR",
        data_kind="episodes",
    ),
    "reddit": Entry(
        "tasks.reddit.task:RedditTask",
        "account ranking (MRR, R@k) and linking (EER, minDCF) on post streams split by author and time; main score EER",
        data_kind="post-streams",
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

# `harness pairs`: "module:function" building a PAN 2020-2023 dataset from real corpora (tasks.pairs)
PAIRS_BUILDER = Entry(
    "tasks.pairs:build_pairs", "PAN 2020-2023 verification pairs from forum posts, PAN corpora, folders or JSONL"
)

# `harness pretrain-style`: "module:function" fine-tuning an encoder authorship-contrastively on forum posts
STYLE_PRETRAINING = Entry(
    "systems.style_encoder.cli:pretrain_style", "a style encoder pre-trained on forum posts, test sets left out"
)

SYSTEMS: dict[str, Entry] = {
    "cngdist": Entry(
        "systems.baselines.cngdist:CharNgramDistance",
        "PAN baseline: TF-IDF of character 4-grams, cosine, abstain band tuned on train",
        serves=VERIFICATION,
    ),
    "compressor": Entry(
        "systems.baselines.compressor:CompressorBaseline",
        "PAN baseline: PPMd cross-entropy of each text given the other, logistic regression",
        serves=VERIFICATION,
    ),
    "tfidf": Entry(
        "systems.baselines.tfidf:WordTfidf",
        "word TF-IDF cosine with the same calibration as cngdist",
        serves=VERIFICATION,
    ),
    "typed_ngrams": Entry(
        "systems.baselines.typed_ngrams:TypedNgrams",
        "Sapkota et al. 2015: TF-IDF of typed character 3-grams (default affix + punctuation), as cngdist",
        serves=VERIFICATION,
    ),
    "pos_ngrams": Entry(
        "systems.baselines.pos_ngrams:PosNgrams",
        "TF-IDF of part-of-speech tag 1-3-grams (offline perceptron tagger, Penn tags), as cngdist (pos extra)",
        serves=VERIFICATION,
        extra="pos",
    ),
    "wccn": Entry(
        "systems.wccn:WccnCosine",
        "character + word TF-IDF, SVD, within-author covariance normalisation (speaker verification's WCCN), cosine",
        serves=VERIFICATION,
    ),
    "ngram_style": Entry(
        "systems.style_encoder.verifier:NgramStyle",
        "wccn's style space with a projection learnt authorship-contrastively (pre-trained on forum posts or the "
        "training problems), cosine (neural extra)",
        serves=VERIFICATION,
        extra="neural",
    ),
    "encoder_wccn": Entry(
        "systems.encoder_wccn:EncoderWccn",
        "frozen transformer's lower-layer [CLS] vectors (MiniLM layers 1-4), PCA, WCCN, cosine (neural extra)",
        serves=VERIFICATION,
        extra="neural",
    ),
    "length_ratio": Entry(
        "systems.baselines.length_ratio:LengthRatio",
        "sanity floor: ratio of the texts' lengths (shorter / longer), abstain band tuned on train",
        serves=VERIFICATION,
    ),
    "unmasking": Entry(
        "systems.unmasking:Unmasking",
        "Koppel & Schler 2004: degradation curves of known-vs-unknown chunk SVMs, logistic regression over curves",
        serves=VERIFICATION,
    ),
    "pair_features": Entry(
        "systems.pair_features:PairFeatures",
        "after Frery et al. 2014 (PAN14 essays winner): pair similarity features, CART tree (--param trees=N: forest)",
        serves=VERIFICATION,
    ),
    "impostors": Entry(
        "systems.impostors:GeneralImpostors",
        "General Impostors (Koppel & Winter 2014; Seidman 2013): random feature subsets, training texts as impostors",
        serves=VERIFICATION,
    ),
    "siamese_bilstm": Entry(
        "systems.siamese_bilstm.system:SiameseBiLSTM",
        "BERT-BiLSTM Siamese ensemble (PAN 2023): frozen encoder layer-CLS -> Bi-LSTM, contrastive loss, routing",
        serves=VERIFICATION,
        extra="neural",
    ),
    "nbcsauthor": Entry(
        "systems.nbcsauthor.system:EpisodeAuthor",
        "SYSML episode encoder (BPE CNN, time, metapath2vec sub-forum, transformer) trained with NBC-Softmax",
        serves=EPISODES,
        extra="neural",
    ),
    "sysml": Entry(
        "systems.nbcsauthor.system:SYSML",
        "SYSML episode encoder trained with softmax (--param loss=cosface|arcface|multi_similarity|contrastive)",
        serves=EPISODES,
        extra="neural",
    ),
    "episode_cnn": Entry(
        "systems.nbcsauthor.system:EpisodeCNN",
        "darkweb baseline: the SYSML CNN with time and sub-forum, mean pooling instead of the transformer",
        serves=EPISODES,
        extra="neural",
    ),
    "episode_tfidf": Entry(
        "systems.baselines.forum_tfidf:EpisodeTfidf",
        "darkweb baseline: word TF-IDF of an episode's posts, cosine",
        serves=FORUM,
    ),
    "forum_wccn": Entry(
        "systems.forum_wccn:ForumWccn",
        "darkweb and reddit: character + word TF-IDF, SVD, whitened by the variation within one author's posts (WCCN)",
        serves=FORUM,
    ),
    "forum_ngram_style": Entry(
        "systems.style_encoder.forum:ForumNgramStyle",
        "darkweb and reddit: the n-gram style encoder (pretrain-style --encoder ngram, or learnt from the training "
        "split) on each post, mean, cosine",
        serves=FORUM,
        extra="neural",
    ),
    "varlen_linker": Entry(
        "systems.varlen_linker.system:VarlenLinker",
        "Khan et al. 2021: conv post encoder + attention over variable-size samples (Beta(3,1) sizes), triplet loss",
        serves=POST_STREAMS,
        extra="neural",
    ),
    "iur_fixed": Entry(
        "systems.varlen_linker.system:IurFixed",
        "reddit baseline: the varlen_linker encoder trained on fixed 16-post samples; groups of 16 averaged",
        serves=POST_STREAMS,
        extra="neural",
    ),
    "varlen_avg": Entry(
        "systems.varlen_linker.system:VarlenAvg",
        "reddit baseline (Avg): the varlen_linker encoder trained on single posts; post embeddings averaged",
        serves=POST_STREAMS,
        extra="neural",
    ),
    "reddit_tfidf": Entry(
        "systems.baselines.forum_tfidf:RedditTfidf",
        "reddit baseline: word TF-IDF of a sample's concatenated text, cosine",
        serves=FORUM,
    ),
    "episode_fusion": Entry(
        "systems.forum_fusion.system:EpisodeFusion",
        "darkweb: learned weights (listwise, training split) of word and char TF-IDF, sub-forum and weekday cosines",
        serves=EPISODES,
    ),
    "reddit_fusion": Entry(
        "systems.forum_fusion.system:RedditFusion",
        "reddit: learned weights (listwise, training split) of word and char TF-IDF, subreddit and hour cosines",
        serves=POST_STREAMS,
    ),
    "episode_encoder": Entry(
        "systems.forum_encoder.system:EpisodeEncoder",
        "darkweb: MiniLM (or a local HF model) post vectors, mean over an episode, projection trained by triplet loss",
        serves=FORUM,
        extra="neural",
    ),
    "reddit_encoder": Entry(
        "systems.forum_encoder.system:RedditEncoder",
        "reddit: MiniLM (or a local HF model) post vectors, mean over a sample, projection trained by triplet loss",
        serves=FORUM,
        extra="neural",
    ),
    "stacked": Entry(
        "systems.stacked:StackedEnsemble",
        "after PAN14's meta-classifier: logistic regression over out-of-fold answers of members chosen by CV",
        serves=VERIFICATION,
    ),
    "char_lm": Entry(
        "systems.char_lm.system:CharLM",
        "Bagnall 2015: shared character GRU, one softmax head per author, relative cross-entropy (preset=paper)",
        serves=VERIFICATION,
        extra="neural",
    ),
}


def load(entry_point: str) -> Any:
    """Import "module:attribute" and return the attribute."""
    module_name, _, attribute = entry_point.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute)


def entry(table: dict[str, Entry], noun: str, name: str) -> Entry:
    """The registry entry of `name`, or a one-line error listing the known names (`noun`: "task", "system", ...)."""
    if name not in table:
        known = ", ".join(sorted(table))
        raise HarnessError(f"unknown {noun} {name!r}; known {noun}s: {known}")
    return table[name]


def _lookup(table: dict[str, Entry], noun: str, name: str) -> Any:
    return load(entry(table, noun, name).target)


def task_class(name: str) -> Any:
    return _lookup(TASKS, "task", name)


def system_class(name: str) -> Any:
    return _lookup(SYSTEMS, "system", name)


def converter(name: str) -> Any:
    return _lookup(CONVERTERS, "converter", name)


def fits(system_name: str, task_name: str) -> bool:
    """Whether a system serves the kind of data a task gives (from the declarations; nothing is imported)."""
    system, task = SYSTEMS[system_name], TASKS[task_name]
    return not system.serves or not task.data_kind or task.data_kind in system.serves


def check_fits(system_name: str, task_name: str) -> None:
    """A one-line error unless both names exist and the system serves the task's kind of data; names what fits."""
    task = entry(TASKS, "task", task_name)
    entry(SYSTEMS, "system", system_name)
    if fits(system_name, task_name):
        return
    tasks = [name for name in TASKS if fits(system_name, name)]
    systems = [name for name in SYSTEMS if fits(name, task_name)]
    gives = DATA_KINDS.get(task.data_kind, task.data_kind)
    raise HarnessError(
        f"system {system_name!r} does not fit task {task_name!r}, which gives {gives}; "
        f"{system_name} runs on: {', '.join(tasks) or 'no task'}; systems for {task_name}: {', '.join(systems)}"
    )


def pan_answer_tasks() -> list[str]:
    """The tasks with PAN answer files: the ones `harness predict` and `harness score` work with."""
    return [name for name, task in TASKS.items() if task.pan_answers]
