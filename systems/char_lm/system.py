"""`char_lm`: a multi-headed character-level language model verifier in the spirit of Bagnall 2015.

Douglas Bagnall, "Author identification using multi-headed recurrent neural networks", Working Notes
of CLEF 2015 (PAN 2015 author identification, winner in English; arXiv:1506.04891). A character-level
recurrent language model whose recurrent layer is shared by all authors, with one softmax output head
per author: the shared layer models the language as a whole without over-fitting the few thousand
characters each author has, the heads each pick out an author's habits. An unknown text is attributed
by comparing its cross-entropy under its candidate author's head with its cross-entropy under the
other heads.

How this system uses it (one head per distinct set of known texts, i.e. per problem's author):

1. fit: text in a reduced alphabet (`systems.char_lm.text`); the shared network and one head per
   training author are trained jointly on the known texts of the training problems only
   (`toolkit.training.train_epochs`; each chunk of text is predicted by its own author's head).
2. heads: with the recurrent layer frozen, every author's head is (re)fitted on the recurrent states of
   its known texts, starting from the mean head, with an L2 pull towards it. The same procedure makes
   the heads of new problems' authors at predict time, so training and test scores are made alike.
3. score: for problem i with unknown text u and its author's head a,
   d_i = mean over reference heads h of [CE(u, h) - bias(h)] - [CE(u, a) - bias(a)],
   where the reference heads are the training authors' heads that share no text with the problem
   (with `max_reference_heads`, those of a seeded sample of that many training authors) and bias(h)
   is head h's mean cross-entropy on reference texts (training unknown texts that share no text with
   the head's training problems; for the own head of a problem being answered, none of that problem's
   texts, so that no answer depends on which other problems are answered with it): cross-entropies
   centred over texts and over heads, as Bagnall
   normalised each head's scores over the set. Positive d: the own head predicts u better than others.
4. calibration: d -> probability by a logistic fit, then PAN's abstain band
   (`toolkit.calibration.fit_abstain_band`), both fitted on the training problems' d; the band maximises the
   training split's ranking measure (`objective="task"`: AUC x c@1 on PAN 2013-2015, overall on PAN 2020-2023).

Defaults: the "cpu" preset is a small GRU sized to train on 2 CPU cores in minutes; the "paper" preset
(`--param preset=paper`) is a GPU-sized model in the direction of the paper (larger recurrent layer,
whole texts, many more epochs). The paper's text was not at hand when this was written (it is not in
../shared/papers), so neither preset's sizes are quoted from it: the architecture (shared recurrent
layer, one head per author, reduced alphabet, relative cross-entropy over heads) is the paper's, the
numbers are ours. Bagnall also averaged an ensemble of networks; this system trains one.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from core.errors import HarnessError
from core.records import VerificationData, VerificationProblem
from harness.params import build_part
from toolkit.checkpoint import CONFIG_NAME, load_checkpoint, runtime_params
from toolkit.splits import text_key
from toolkit.verifier import CalibratedVerifier

logger = logging.getLogger("harness")
_System = TypeVar("_System", bound="CharLM")
CELLS = ("gru", "lstm", "rnn")


@dataclass(frozen=True)
class CpuPreset:
    """Network sizes and schedule; the default ("cpu") trains on 2 CPU cores in minutes.

    cell, embedding, hidden, layers: the shared recurrent network. seq_len, batch_size, epochs,
    steps_per_epoch (None: one pass over the training authors' text), lr, grad_clip: joint training
    (Adam). max_text_chars: each text is cut to its first symbols (None: whole texts). window, warmup:
    scoring windows and the context read before each. head_rows (None: all), head_steps, head_lr,
    head_l2: fitting a head on frozen states. ref_chars, max_refs: the reference texts of head biases.
    max_reference_heads (None: every training author's head): the heads an unknown text is compared with
    are a seeded sample of this many training authors' heads. Scoring costs one pass per text and
    reference head, so thousands of training authors (a `harness pairs` set) make it the run's main cost;
    Bagnall's PAN 2015 sets had at most a few hundred authors, so a sample of that size keeps his scale.
    """

    name: ClassVar[str] = "cpu"
    cell: str = "gru"
    embedding: int = 32
    hidden: int = 128
    layers: int = 1
    seq_len: int = 128
    batch_size: int = 64
    epochs: int = 4
    steps_per_epoch: int | None = None
    lr: float = 2e-3
    grad_clip: float = 1.0
    max_text_chars: int | None = 30000
    window: int = 256
    warmup: int = 32
    head_rows: int | None = 10000
    head_steps: int = 60
    head_lr: float = 0.02
    head_l2: float = 1e-3
    ref_chars: int = 2000
    max_refs: int = 200
    max_reference_heads: int | None = None

    def __post_init__(self) -> None:
        if self.cell not in CELLS:
            raise ValueError(f"cell must be one of {', '.join(CELLS)}, not {self.cell!r}")
        positive = ("embedding", "hidden", "layers", "seq_len", "batch_size", "window", "ref_chars", "max_refs")
        for field in positive:
            if getattr(self, field) < 1:
                raise ValueError(f"{field} must be positive, got {getattr(self, field)!r}")
        for field in ("epochs", "warmup", "head_steps"):
            if getattr(self, field) < 0:
                raise ValueError(f"{field} must be >= 0, got {getattr(self, field)!r}")
        for field in ("lr", "grad_clip", "head_lr"):  # a negative one trains uphill without a word (audit 22, F2)
            if not 0 < getattr(self, field) < math.inf:
                raise ValueError(f"{field} must be positive and finite, got {getattr(self, field)!r}")
        for field in ("steps_per_epoch", "max_text_chars", "head_rows", "max_reference_heads"):
            value = getattr(self, field)
            if value is not None and value < 1:
                raise ValueError(f"{field} must be positive or None, got {value!r}")


@dataclass(frozen=True)
class PaperPreset(CpuPreset):
    """A GPU-sized configuration ("paper"): larger recurrent layer, whole texts, long training."""

    name: ClassVar[str] = "paper"
    embedding: int = 64
    hidden: int = 512
    seq_len: int = 256
    epochs: int = 40
    lr: float = 1e-3
    max_text_chars: int | None = None
    head_rows: int | None = None
    head_steps: int = 150
    ref_chars: int = 5000


class CharLM(CalibratedVerifier):
    """Multi-headed character RNN verifier (Bagnall 2015); see the module docstring.

    Parameters: preset (CpuPreset "cpu", the default, or PaperPreset "paper"; fields settable as
    `--param preset.hidden=256`), objective and grid_step of the abstain band, device ("auto", "cpu",
    "cuda"), mixed_precision (autocast on CUDA), cpu_threads (torch's CPU threads; None: torch's default).
    """

    name: ClassVar[str] = "char_lm"
    FITTED: ClassVar[tuple[str, ...]] = ("_network", "_band", "_heads")
    CALIBRATION_IN_STATE: ClassVar[bool] = False  # not cross-fitted (see `_fit`)
    PART_CHOICES: ClassVar[dict[str, tuple[type, ...]]] = {"preset": (CpuPreset, PaperPreset)}

    def __init__(
        self,
        *,
        preset: CpuPreset = CpuPreset(),  # noqa: B008  (frozen: a shared default cannot change)
        objective: str = "task",
        grid_step: float = 0.01,
        device: str = "auto",
        mixed_precision: bool = True,
        cpu_threads: int | None = None,
    ) -> None:
        if isinstance(preset, str | dict):
            preset = build_part(CpuPreset(), preset, choices=(PaperPreset,), where=f"{self.name}: preset")
        if not isinstance(preset, CpuPreset):
            raise HarnessError(f"{self.name}: preset must be a CpuPreset or PaperPreset, not {preset!r}")
        super().__init__(locals())
        if cpu_threads is not None and cpu_threads < 1:
            raise HarnessError(f"{self.name}: cpu_threads must be positive or None")
        self.preset = preset
        self.device = device
        self.mixed_precision = mixed_precision
        self.cpu_threads = cpu_threads
        self._network: Any = None
        self._heads: dict[str, Any] | None = None  # reference heads: weights, biases, biases on refs, keys
        self._refs: list[np.ndarray] = []
        self._ref_keys: list[str] = []
        self._platt: tuple[float, float] | None = None
        self.training_stats: dict[str, Any] = {}
        # the training problems' d that the map and band were fitted on (for calibration studies; not saved)
        self.training_scores: np.ndarray | None = None

    # ------------------------------------------------------------------ fitting

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Train the shared network on the training known texts, fit the heads, calibrate on the training unknowns.

        What is honest here: the network and heads never see a training problem's unknown text (only
        known texts are trained on), and a problem's reference heads and head biases leave out every
        head and reference text that shares a text with it; so the training d's that the logistic map
        and the band are fitted on are scores of texts the model did not train on. They are not fully
        cross-fitted (5 trainings of the network would cost 5 times the CPU time): the shared recurrent
        layer did see the training problems' known texts, the test problems' known texts only through
        their freshly fitted heads.
        """
        import torch

        from toolkit.devices import resolve_device, warn_if_gpu_sized
        from toolkit.training import train_epochs

        started = time.process_time()
        device = resolve_device(self.device)
        warn_if_gpu_sized(self.name, self.preset.name, device)
        p = self.preset
        self._heads = None
        with _threads(self.cpu_threads):
            torch.manual_seed(seed)
            authors = _authors(train.problems, p.max_text_chars)
            network = _network(p, len(authors.texts)).to(device)
            chunks = [
                (a, start)
                for a, symbols in enumerate(authors.texts)
                for start in range(0, max(len(symbols) - 1, 0), p.seq_len)
                if len(symbols) - start >= 2
            ]
            if not chunks:
                raise HarnessError(f"{train.source}: the known texts are too short to train {self.name}")
            rng = np.random.default_rng(seed)

            def epoch_batches(epoch: int) -> list[np.ndarray]:
                order = rng.permutation(len(chunks))
                batches = [order[i : i + p.batch_size] for i in range(0, len(order), p.batch_size)]
                return batches[: p.steps_per_epoch] if p.steps_per_epoch is not None else batches

            def batch_loss(batch: np.ndarray) -> Any:
                from toolkit.devices import autocast

                rows = np.zeros((len(batch), p.seq_len + 1), dtype=np.int64)
                weights = np.zeros((len(batch), p.seq_len), dtype=np.float32)
                heads = np.zeros(len(batch), dtype=np.int64)
                for r, c in enumerate(batch):
                    a, start = chunks[c]
                    piece = authors.texts[a][start : start + p.seq_len + 1]
                    rows[r, : len(piece)] = piece
                    weights[r, : len(piece) - 1] = 1.0
                    heads[r] = a
                with autocast(device, self.mixed_precision):
                    return network.loss(
                        torch.from_numpy(rows).to(device),
                        torch.from_numpy(heads).to(device),
                        torch.from_numpy(weights).to(device),
                    )

            optimizer = torch.optim.Adam(network.parameters(), lr=p.lr)
            history = train_epochs(
                network=network,
                optimizer=optimizer,
                epochs=p.epochs,
                epoch_batches=epoch_batches,
                batch_loss=batch_loss,
                device=device,
                mixed_precision=self.mixed_precision,
                label=self.name,
                grad_clip=p.grad_clip,
            )
            network.eval()
            self._network = network
            self._refs, self._ref_keys = _references(train.problems, p.ref_chars, p.max_refs)
            self._heads = self._make_heads(train.problems, authors, device)
            self._heads["reference"] = _reference_sample(len(authors.texts), p.max_reference_heads, seed)
            own_bias = self._heads["bias_on_refs"][self._heads["of_problem"]]
            d = self._relative_entropies(train.problems, self._heads, own_bias, device)
        if len(np.unique(labels)) < 2:
            raise HarnessError(f"{train.source}: calibration needs both same- and different-author problems")
        self._platt = fit_logistic_map(d, labels)
        self._band = self.fit_band(train, self.probabilities(d), labels)
        self.training_scores = d
        self.training_stats = {
            "history": history,
            "heads": len(authors.texts),
            "training_symbols": int(sum(len(t) for t in authors.texts)),
            "reference_heads": len(self._heads["reference"]),
            "fit_cpu_seconds": round(time.process_time() - started, 1),
            "device": device,
        }

    def _make_heads(self, problems: Sequence[VerificationProblem], authors: _Authors, device: str) -> dict[str, Any]:
        """Heads of `authors` fitted on frozen states, and each head's bias on the reference texts."""
        from systems.char_lm.model import cross_entropies, fit_heads

        p = self.preset
        network = self._network
        weight = network.head_weight.detach().float().cpu().numpy()
        bias = network.head_bias.detach().float().cpu().numpy()
        # a new author's head starts from the mean head of the training authors
        init_weight, init_bias = (weight.mean(axis=0), bias.mean(axis=0))
        if self._heads is not None:
            init_weight, init_bias = self._heads["init_weight"], self._heads["init_bias"]
        states = self._states(authors.texts, device)
        if p.head_rows is not None:
            states = [(s[: p.head_rows], t[: p.head_rows]) for s, t in states]
        weights, biases = fit_heads(
            states,
            init_weight=init_weight,
            init_bias=init_bias,
            steps=p.head_steps,
            lr=p.head_lr,
            l2=p.head_l2,
            group=16,
            device=device,
        )
        ref_states = self._states(self._refs, device)
        ref_ce = (
            np.stack([cross_entropies(s, t, weights, biases, group=64, device=device) for s, t in ref_states], axis=1)
            if ref_states
            else np.zeros((len(weights), 0))
        )
        return {
            "weights": weights,
            "biases": biases,
            "ref_ce": ref_ce,
            "bias_on_refs": self._bias_on_refs(ref_ce, range(len(weights)), authors.excluded),
            "excluded": authors.excluded,
            "of_problem": authors.of_problem,
            "init_weight": init_weight,
            "init_bias": init_bias,
        }

    def _states(self, texts: Sequence[np.ndarray], device: str) -> list[tuple[np.ndarray, np.ndarray]]:
        from systems.char_lm.model import text_states

        p = self.preset
        return text_states(
            self._network,
            texts,
            window=p.window,
            warmup=p.warmup,
            batch=64,
            device=device,
            mixed_precision=self.mixed_precision,
        )

    def _bias_on_refs(self, ref_ce: np.ndarray, heads: Iterable[int], excluded: Iterable[set[str]]) -> np.ndarray:
        """Each head's mean cross-entropy on the reference texts whose keys it is not given in `excluded`
        (heads and excluded sets paired in order); the mean over every reference where none is left."""
        grand = float(ref_ce.mean()) if ref_ce.size else 0.0
        biases = []
        for head, keys in zip(heads, excluded, strict=True):
            usable = np.array([key not in keys for key in self._ref_keys], dtype=bool)
            biases.append(float(ref_ce[head, usable].mean()) if usable.any() else grand)
        return np.array(biases, dtype=np.float64)

    def _relative_entropies(
        self, problems: Sequence[VerificationProblem], own: dict[str, Any], own_bias: np.ndarray, device: str
    ) -> np.ndarray:
        """d of each problem (module docstring, step 3): own heads `own`, each problem's own head's bias
        `own_bias`, reference heads the training ones."""
        from systems.char_lm.model import cross_entropies

        assert self._heads is not None
        ref = self._heads
        p = self.preset
        unknowns = [_encode(problem.texts[-1], p.max_text_chars) for problem in problems]
        states = self._states(unknowns, device)
        reference = ref["reference"]
        d = np.zeros(len(problems))
        for i, (problem, (s, t)) in enumerate(zip(problems, states, strict=True)):
            if len(t) == 0:
                continue  # an empty unknown text: no evidence either way
            keys = {text_key(text) for text in problem.texts}
            head = own["of_problem"][i]
            own_ce = (
                cross_entropies(
                    s, t, own["weights"][head : head + 1], own["biases"][head : head + 1], group=1, device=device
                )[0]
                - own_bias[i]
            )
            allowed = reference[[not (keys & ref["excluded"][h]) for h in reference]]
            if not len(allowed):
                continue
            ce = cross_entropies(s, t, ref["weights"][allowed], ref["biases"][allowed], group=64, device=device)
            d[i] = float(np.mean(ce - ref["bias_on_refs"][allowed]) - own_ce)
        return d

    def probabilities(self, raw: np.ndarray) -> np.ndarray:
        """The logistic map of d (fitted on the training problems' d) to the probability of "same author"."""
        assert self._platt is not None
        a, b = self._platt
        return 1.0 / (1.0 + np.exp(-(a * raw + b)))

    # ------------------------------------------------------------------ answering

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """The relative cross-entropy d of each problem (nats per symbol; higher: more likely the same author)."""
        self._check_fitted()
        from toolkit.devices import resolve_device

        device = resolve_device(self.device)
        with _threads(self.cpu_threads):
            import torch

            torch.manual_seed(self._seed or 0)
            authors = _authors(problems, self.preset.max_text_chars)
            own = self._make_heads(problems, authors, device)
            # a test problem's own head is judged on the references other than its own texts, not other than
            # the texts of every test problem sharing its known set: no answer may depend on the other problems
            own_texts = [{text_key(text) for text in problem.texts} for problem in problems]
            own_bias = self._bias_on_refs(own["ref_ce"], own["of_problem"], own_texts)
            return self._relative_entropies(problems, own, own_bias, device)

    # ------------------------------------------------------------------ checkpoints

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Band, seed, logistic map and head keys in config.json; network, heads and references as arrays."""
        assert self._heads is not None
        heads = self._heads
        arrays = {f"network.{k}": v.detach().float().cpu().numpy() for k, v in self._network.state_dict().items()}
        arrays |= {
            "heads.weights": heads["weights"],
            "heads.biases": heads["biases"],
            "heads.bias_on_refs": heads["bias_on_refs"].astype(np.float64),
            "heads.init_weight": heads["init_weight"],
            "heads.init_bias": heads["init_bias"],
            "heads.reference": heads["reference"],
            "refs.symbols": np.concatenate(self._refs) if self._refs else np.zeros(0, dtype=np.uint8),
            "refs.lengths": np.array([len(r) for r in self._refs], dtype=np.int64),
        }
        state = self.band_state() | {
            "platt": list(self._platt or ()),
            "head_excluded": [sorted(keys) for keys in heads["excluded"]],
            "ref_keys": self._ref_keys,
            "training_stats": self.training_stats,
        }
        return state, arrays

    @classmethod
    def load(cls: type[_System], directory: Path, *, runtime: Mapping[str, Any] | None = None) -> _System:
        """Read a checkpoint written by `save`; device, mixed precision and CPU threads are this machine's
        (`runtime`, else the defaults), not the checkpoint's."""
        import torch

        from harness.params import build
        from toolkit.devices import resolve_device

        params, state, arrays = load_checkpoint(directory, system=cls.name)
        where = Path(directory) / CONFIG_NAME
        params = runtime_params(params, runtime, where=where)
        try:
            system = build(cls, params)
            p = system.preset
            weights = arrays["heads.weights"]
            network = _network(p, weights.shape[0])
            prefix = "network."
            network.load_state_dict(
                {k[len(prefix) :]: torch.from_numpy(v.copy()) for k, v in arrays.items() if k.startswith(prefix)}
            )
            lengths = arrays["refs.lengths"]
            bounds = np.concatenate([[0], np.cumsum(lengths)])
            system._refs = [arrays["refs.symbols"][bounds[i] : bounds[i + 1]] for i in range(len(lengths))]
            system._ref_keys = list(state["ref_keys"])
            system._heads = {
                "weights": weights,
                "biases": arrays["heads.biases"],
                "bias_on_refs": arrays["heads.bias_on_refs"],
                "excluded": [set(keys) for keys in state["head_excluded"]],
                "of_problem": [],
                "init_weight": arrays["heads.init_weight"],
                "init_bias": arrays["heads.init_bias"],
                # checkpoints written before the sample existed compared with every head
                "reference": arrays.get("heads.reference", np.arange(len(weights))),
            }
            a, b = state["platt"]
            system._platt = (float(a), float(b))
            system.restore_band(state, where=where)
            system.training_stats = state.get("training_stats", {})
        except (KeyError, TypeError, ValueError, RuntimeError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        system._network = network.to(resolve_device(system.device)).eval()
        return system


# ---------------------------------------------------------------------- helpers


def fit_logistic_map(d: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(a, b) of the map d -> 1 / (1 + exp(-(a d + b))), a logistic fit of the training problems' d."""
    from sklearn.linear_model import LogisticRegression

    # d is in nats per symbol, a small range: standardise for the fit, fold the scale into (a, b)
    scale = float(np.std(d)) or 1.0
    model = LogisticRegression().fit((d / scale)[:, None], labels)
    return float(model.coef_[0, 0] / scale), float(model.intercept_[0])


@dataclass
class _Authors:
    """Distinct known-text sets of some problems: each one author (one head)."""

    texts: list[np.ndarray]  # the head's training symbols: its known texts joined by a space
    excluded: list[set[str]]  # text keys of every problem that uses the head (known and unknown texts)
    of_problem: list[int]  # the head of each problem


def _encode(text: str, max_chars: int | None) -> np.ndarray:
    from systems.char_lm.text import encode

    return encode(text, max_chars)


def _network(preset: CpuPreset, heads: int) -> Any:
    """The shared character GRU with `heads` softmax heads, sized by the preset (torch imported only here)."""
    from systems.char_lm.model import MultiHeadCharRnn
    from systems.char_lm.text import ALPHABET

    return MultiHeadCharRnn(
        vocab=len(ALPHABET), embedding=preset.embedding, hidden=preset.hidden, layers=preset.layers,
        cell=preset.cell, heads=heads,
    )  # fmt: skip


def _authors(problems: Sequence[VerificationProblem], max_chars: int | None) -> _Authors:
    """One author per distinct set of known texts (PAN reuses a known set under several problem ids)."""
    from systems.char_lm.text import INDEX

    index: dict[tuple[str, ...], int] = {}
    texts: list[np.ndarray] = []
    excluded: list[set[str]] = []
    of_problem: list[int] = []
    for problem in problems:
        if len(problem.texts) < 2:
            raise HarnessError(f"problem {problem.id}: needs at least one known text and the unknown text")
        known = problem.texts[:-1]
        keys = tuple(sorted({text_key(t) for t in known}))
        if keys not in index:
            index[keys] = len(texts)
            parts = [_encode(t, max_chars) for t in dict.fromkeys(known)]
            space = np.array([INDEX[" "]], dtype=np.uint8)
            joined = [x for part in parts for x in (part, space)][:-1]
            texts.append(np.concatenate(joined) if joined else np.zeros(0, dtype=np.uint8))
            excluded.append(set(keys))
        head = index[keys]
        excluded[head].add(text_key(problem.texts[-1]))
        of_problem.append(head)
    return _Authors(texts, excluded, of_problem)


def _reference_sample(heads: int, size: int | None, seed: int) -> np.ndarray:
    """Indices of the reference heads, ascending: all `heads`, or a sample of `size` of them drawn with `seed`."""
    if size is None or size >= heads:
        return np.arange(heads)
    return np.sort(np.random.default_rng([seed, heads]).choice(heads, size=size, replace=False))


def _references(
    problems: Sequence[VerificationProblem], ref_chars: int, max_refs: int
) -> tuple[list[np.ndarray], list[str]]:
    """The reference texts of head biases: distinct training unknown texts, each cut to `ref_chars` symbols."""
    seen: dict[str, np.ndarray] = {}
    for problem in problems:
        key = text_key(problem.texts[-1])
        if key not in seen and len(seen) < max_refs:
            seen[key] = _encode(problem.texts[-1], ref_chars)
    return list(seen.values()), list(seen)


class _threads:
    """torch's CPU threads set for a block, restored after it (None: leave them)."""

    def __init__(self, count: int | None) -> None:
        self.count = count
        self.before: int | None = None

    def __enter__(self) -> None:
        if self.count is not None:
            import torch

            self.before = torch.get_num_threads()
            torch.set_num_threads(self.count)

    def __exit__(self, *exc: object) -> None:
        if self.before is not None:
            import torch

            torch.set_num_threads(self.before)
