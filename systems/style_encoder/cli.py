"""`harness pretrain-style`'s work, behind the CLI (which must not import torch): corpus, exclusions, training."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from core.errors import HarnessError
from systems.style_encoder.band_folds import (
    fold_encoders,
    fold_exclusions,
    fold_folder,
    folds_record,
    repeat_seed,
    training_pair_folds,
)
from systems.style_encoder.corpus import (
    Exclusions,
    PretrainingCorpus,
    excluded_by_sets,
    pretraining_corpus,
    training_split_of,
)
from systems.style_encoder.fold_jobs import MAIN, FoldEncoder, pretrain_fold_encoders
from systems.style_encoder.ngram import (
    VIEWS,
    NgramStyleModel,
    NgramStylePretraining,
    load_ngram_style,
    manifest_recipe,
    ngram_settings,
    posts_checksum,
    pretrain_ngram_style,
    recipe,
    write_pretrained,
)
from systems.style_encoder.pretraining import preset, pretrain_style_encoder, pretrain_style_encoder_folds
from toolkit.band_folds import fold_folders, read_folds

logger = logging.getLogger("harness")


# the settings `harness pretrain-style` passes that the n-gram encoder has (the rest are the transformer's)
NGRAM_SETTINGS = ("steps", "authors_per_batch", "lr", "seed", "cross_kind_share", "match_community")
NGRAM_ONLY = ("dimensions", "char_features", "word_features")  # the style space's size; the transformer has none


def _option(setting: str) -> str:
    """The command-line option of a pre-training setting (`time_limit_s` is `--time-limit`; audit 25, F2)."""
    return "--time-limit" if setting == "time_limit_s" else "--" + setting.replace("_", "-")


def pretrain_style(
    posts: Path,
    out_dir: Path,
    *,
    exclude_sets: Sequence[Path],
    preset_name: str,
    exclude_all_sets: Sequence[Path] = (),
    encoder: str = "transformer",
    train_split_of: str | None = None,
    task_params: dict[str, Any] | None = None,
    band_folds: int | None = None,
    band_repeats: int | None = None,
    band_views: Sequence[str] = (),
    reuse_from: Path | None = None,
    jobs: int = 1,
    **settings: Any,
):
    """Read the posts less the sets' test sides (both splits of `exclude_all_sets`; for a forum task, only its
    training split), pre-train the `encoder` ("transformer" or "ngram"), write `out_dir`; return the manifest.

    `band_folds` K (one `exclude_sets` set): K more encoders, each also without a K-th of that set's training
    authors, written beside the main one (`systems.style_encoder.band_folds`); for the ngram encoder `band_repeats` R
    of them a fold, and one more a fold for each of `band_views` (`VIEWS`; a view named twice: two, with other
    seeds).
    `reuse_from` (with `band_folds`): an earlier such folder of the same recipe (posts, exclusions, settings, folds),
    whose encoders are copied instead of trained again; only those it lacks (more repeats or views) are pre-trained.
    `jobs` (with `band_folds`): how many band-fold encoders are pre-trained at a time, each in its own process
    (`systems.style_encoder.fold_jobs`)."""
    if band_folds is not None and len(exclude_sets) != 1:
        raise HarnessError(
            "--band-folds goes with one --exclude-test-of SET (the set whose training pairs get out-of-fold scores)"
        )
    if band_folds is not None and any(
        Path(other).resolve() == Path(exclude_sets[0]).resolve() for other in exclude_all_sets
    ):
        raise HarnessError(  # every fold encoder would be the main one again (audit 10, F5)
            f"--band-folds: {exclude_sets[0]} is also given to --exclude-all-of, so its training authors are left "
            "out of every encoder and a fold has none of its own to leave out; drop one of the two"
        )
    if band_repeats is not None and band_folds is None:
        raise HarnessError("--band-repeats goes with --band-folds K (it is the number of encoders a fold)")
    if band_views and band_folds is None:
        raise HarnessError("--band-view goes with --band-folds K (it adds an encoder of another view to each fold)")
    unknown = sorted(set(band_views) - set(VIEWS))
    if unknown:
        raise HarnessError(f"--band-view {unknown[0]}: no such view (choose from {', '.join(sorted(VIEWS))})")
    if reuse_from is not None and band_folds is None:
        raise HarnessError("--reuse-from goes with --band-folds K (it keeps an earlier band-fold folder's encoders)")
    if jobs != 1 and band_folds is None:
        raise HarnessError("--jobs goes with --band-folds K (it pre-trains the band folds' encoders side by side)")
    if encoder == "transformer":  # a fine-tuned transformer a fold; one at a time, as a GPU trains them
        given = [option for option, value in (("--band-repeats", band_repeats), ("--band-view", band_views),
                 ("--reuse-from", reuse_from), ("--jobs", jobs != 1)) if value]  # fmt: skip
        if given:
            raise HarnessError(
                f"{', '.join(given)}: --encoder ngram's (the transformer's band folds: one encoder each)"
            )
    if encoder == "ngram":
        ngram_names = NGRAM_SETTINGS + NGRAM_ONLY
        given = sorted(name for name, value in settings.items() if value is not None and name not in ngram_names)
        if given or preset_name != "cpu":
            options = ", ".join(_option(name) for name in given) or "--preset gpu"
            raise HarnessError(f"{options}: the transformer encoder's; --encoder ngram takes none of them")
        chosen_ngram = ngram_settings(**{name: settings.get(name) for name in ngram_names})
    else:
        given = [name for name in NGRAM_ONLY if settings.pop(name, None) is not None]
        if given:
            options = ", ".join(_option(name) for name in given)
            raise HarnessError(f"{options}: the n-gram encoder's; give --encoder ngram, or leave them out")
        chosen = preset(preset_name, **settings)  # refuses bad settings before the corpus is read
        from toolkit.devices import resolve_device, warn_if_gpu_sized

        warn_if_gpu_sized("pretrain-style", preset_name, resolve_device(chosen.device))
    exclusions = excluded_by_sets(exclude_sets)
    if exclude_all_sets:
        exclusions.merge(excluded_by_sets(exclude_all_sets, splits=("train", "test")))
    if train_split_of is not None:
        from harness.runner import make_task
        from toolkit.read_texts import keys_digest, split_keys

        params = dict(task_params or {})
        task = make_task(train_split_of, params)
        exclusions.only_post_ids = training_split_of(task, train_split_of, params, posts)
        # what the split holds, which a run's training split is compared with (forum_ngram_style)
        texts = keys_digest(split_keys(task.load(Path(posts), "train").post_texts()))
        exclusions.training_split_of = {"task": train_split_of, "task_params": params, "split_texts": texts}
    corpus = pretraining_corpus(posts, exclusions)
    logger.info(
        "style pre-training on %d posts of %d authors (%d with two kinds); left out: %s",
        corpus.posts,
        len(corpus.authors),
        corpus.summary()["authors_with_two_kinds"],
        corpus.left_out,
    )
    if encoder == "ngram":
        folds, main = None, None
        reused = _Reused(reuse_from, corpus.source) if reuse_from is not None else None
        if reused is not None:  # checked before anything is trained: a refusal costs no training
            main = reused.encoder(".", reused.recipe(chosen_ngram, exclusions))
        if band_folds is not None:
            main_encoder = None if main is not None else MainEncoder(corpus, exclusions, chosen_ngram)
            folds, trained_main = _band_fold_models(
                posts, exclusions, exclude_sets[0], band_folds, band_repeats or 1, band_views, chosen_ngram, reused,
                main_encoder, jobs,
            )  # fmt: skip
            main = main or trained_main
        if main is not None:
            model, manifest = main
            reused_from = {"reused_from": reused.summary()} if reused is not None else {}
            return write_pretrained(model, manifest | reused_from, out_dir, folds)
        return pretrain_ngram_style(corpus, exclusions, out_dir, chosen_ngram)[1]
    if band_folds is not None:
        return pretrain_style_encoder_folds(posts, corpus, exclusions, exclude_sets[0], band_folds, out_dir, chosen)
    return pretrain_style_encoder(corpus, exclusions, out_dir, chosen)


class _Reused:
    """An earlier band-fold folder whose encoders this run copies where their recipe is the one it would train."""

    def __init__(self, folder: Path, posts_file: str) -> None:
        self.folder, self.names = Path(folder), []
        self.record = read_folds(self.folder)
        if self.record is None:
            raise HarnessError(f"--reuse-from {folder}: no band folds there (a folder of --band-folds K)")
        self.listed = {name for fold in self.record["folds"] for name in fold_folders(fold)}
        self.posts_sha256 = posts_checksum(posts_file)  # hashed once, compared for every encoder

    def recipe(self, settings: NgramStylePretraining, exclusions: Exclusions) -> dict[str, Any]:
        return recipe(settings, exclusions, self.posts_sha256)

    def check_folds(self, pair_ids: list[list[str]]) -> None:
        if [fold["pair_ids"] for fold in self.record["folds"]] != pair_ids:
            raise HarnessError(
                f"--reuse-from {self.folder}: its band folds hold other pairs (made for {self.record['set']}, with "
                "another set, seed or number of folds); nothing reused"
            )

    def has(self, name: str) -> bool:
        return name in self.listed and (self.folder / name).is_dir()

    def encoder(self, name: str, wanted: dict[str, Any]) -> tuple[NgramStyleModel, dict[str, Any]]:
        """The encoder in subfolder `name` ("." the main one), refused where its recipe is not `wanted`."""
        model, manifest = load_ngram_style(self.folder / name)
        differ = _differences(_resolved_sets(manifest_recipe(manifest)), _resolved_sets(wanted))
        if differ:
            detail = "; ".join(differ[:4]) + (f"; {len(differ) - 4} more" if len(differ) > 4 else "")
            raise HarnessError(f"--reuse-from {self.folder / name}: another recipe ({detail}); nothing reused")
        self.names.append(name)
        logger.info("reused the encoder in %s (same posts, exclusions and settings)", self.folder / name)
        return model, manifest

    def summary(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "encoders": self.names}


def _differences(found: Any, wanted: Any, key: str = "") -> list[str]:
    """Where two recipes differ, by dotted key, with both values (`settings.seed: 0 there, 1 here`): the refusal names
    what to change (audit 10, F11: it printed the whole settings, cut before the key that differed)."""
    if isinstance(found, dict) and isinstance(wanted, dict):
        keys = [*wanted, *(name for name in found if name not in wanted)]
        return [line for name in keys for line in _differences(found.get(name), wanted.get(name), f"{key}.{name}")]
    if found == wanted:
        return []
    shown = [value if not isinstance(value, (list, dict)) or len(str(value)) < 80 else f"{str(value)[:77]}..."
             for value in (found, wanted)]  # fmt: skip
    return [f"{key.lstrip('.')}: {shown[0]!r} there, {shown[1]!r} here"]


def _resolved_sets(recipe_: dict[str, Any]) -> dict[str, Any]:
    """The recipe with its excluded sets' paths resolved (from this folder), so that one set named by another path
    (relative, absolute) is the same set (audit 10, F9)."""
    excluded = recipe_.get("excluded")
    if not isinstance(excluded, dict) or not isinstance(excluded.get("sets"), list):
        return recipe_
    sets = []
    for entry in excluded["sets"]:
        path, paren, how = str(entry).partition(" (")  # "SET (both splits)", "SET (training fold 1 of 3)"
        sets.append(str(Path(path).resolve()) + paren + how)
    return recipe_ | {"excluded": excluded | {"sets": sets}}


class MainEncoder(NamedTuple):
    """A band-fold folder's main encoder, where it is pre-trained with the folds: its posts, exclusions, settings."""

    corpus: PretrainingCorpus
    exclusions: Exclusions
    settings: NgramStylePretraining


def _band_fold_models(
    posts: Path,
    exclusions: Exclusions,
    set_folder: Path,
    folds: int,
    repeats: int,
    views: Sequence[str],
    settings: NgramStylePretraining,
    reused: _Reused | None = None,
    main: MainEncoder | None = None,
    jobs: int = 1,
) -> tuple[tuple[dict[str, Any], list[tuple[NgramStyleModel, dict[str, Any]]]], Any]:
    """The folds' record and, per fold and encoder (`fold_encoders`: the repeats, then the views), the encoder
    pre-trained without what `exclusions` and the fold leave out (copied from `reused` where it has one of that
    recipe); and `main` pre-trained (None where not given). `jobs` of them at a time (`fold_jobs`)."""
    parts, across = training_pair_folds(set_folder, folds, seed=settings.seed)
    excluded = fold_exclusions(exclusions, parts)
    encoders = [
        (view, r, replace(settings, seed=repeat_seed(settings.seed, r), **(VIEWS[view] if view else {})))
        for view, r in fold_encoders(repeats, views)
    ]
    copied: dict[str, tuple[NgramStyleModel, dict[str, Any]]] = {}  # by folder name (it names the fold)
    if reused is not None:  # every copy checked before anything is trained
        reused.check_folds([pair_ids for pair_ids, _ in parts])
        for k in range(1, folds + 1):
            for view, r, encoder_settings in encoders:
                name = fold_folder(k, r, view)
                if reused.has(name):
                    copied[name] = reused.encoder(name, reused.recipe(encoder_settings, excluded[k - 1]))
    to_train = [
        FoldEncoder(fold_folder(k, r, view), k - 1, excluded[k - 1], encoder_settings)
        for k in range(1, folds + 1)
        for view, r, encoder_settings in encoders
        if fold_folder(k, r, view) not in copied
    ]
    if main is not None:  # last, as one at a time always did
        to_train.append(FoldEncoder(".", MAIN, main.exclusions, main.settings))
    read = {MAIN: main.corpus} if main is not None else None
    trained = pretrain_fold_encoders(posts, to_train, jobs=jobs, read=read)
    by_name = copied | {encoder.name: model for encoder, model in zip(to_train, trained, strict=True)}
    models = [by_name[fold_folder(k, r, view)] for k in range(1, folds + 1) for view, r, _ in encoders]
    record = folds_record(set_folder, [pair_ids for pair_ids, _ in parts], across, repeats=repeats, views=views)
    return (record, models), by_name.get(".")
