"""Parts as objects and nested parameters (harness.params)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from core.errors import HarnessError
from harness.params import build, describe, nest


@dataclass(frozen=True)
class Triplet:
    name: ClassVar[str] = "triplet"
    margin: float = 0.2


@dataclass(frozen=True)
class TopK:
    name: ClassVar[str] = "topk"
    top_k: int = 4
    margin: float = 0.25


@dataclass(frozen=True)
class Encoder:
    name: ClassVar[str] = "encoder"
    dim: int = 64
    inner: Triplet = Triplet()

    def __post_init__(self) -> None:
        if self.dim < 1:
            raise ValueError(f"dim must be positive, got {self.dim}")


class Toy:
    name = "toy"
    PART_CHOICES: ClassVar[dict] = {"loss": (Triplet, TopK)}

    def __init__(self, encoder: Encoder = Encoder(), loss: Triplet | TopK = Triplet(), epochs: int = 5) -> None:
        self.encoder, self.loss, self.epochs = encoder, loss, epochs


def test_describe_nests_parts_with_their_names() -> None:
    assert describe(Toy()) == {
        "encoder": {"name": "encoder", "dim": 64, "inner": {"name": "triplet", "margin": 0.2}},
        "loss": {"name": "triplet", "margin": 0.2},
        "epochs": 5,
    }


def test_dotted_keys_pick_a_part_by_name_then_set_its_fields() -> None:
    toy = build(Toy, {"loss": "topk", "loss.top_k": 8, "encoder.dim": 32, "encoder.inner.margin": 0.5})
    assert toy.loss == TopK(top_k=8)
    assert toy.encoder == Encoder(dim=32, inner=Triplet(margin=0.5))
    assert toy.epochs == 5


def test_the_order_of_name_and_fields_does_not_matter() -> None:
    assert build(Toy, {"loss.top_k": 8, "loss": "topk"}).loss == TopK(top_k=8)
    assert nest({"a.b": 1, "a": "x"}) == {"a": {"b": 1, "name": "x"}}


def test_described_parameters_build_the_same_system() -> None:
    toy = build(Toy, {"loss": "topk", "encoder.dim": 7, "epochs": 2})
    assert describe(build(Toy, describe(toy))) == describe(toy)


def test_a_part_object_is_taken_as_it_is() -> None:
    assert build(Toy, {"loss": TopK(top_k=2)}).loss == TopK(top_k=2)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"nope": 1}, "toy has no parameter(s) nope; it takes: encoder, loss, epochs"),
        ({"loss": "arcface"}, "toy: loss must be one of topk, triplet, not 'arcface'"),
        ({"encoder.width": 3}, "toy: encoder (encoder) has no field 'width'; it has: dim, inner"),
        ({"encoder.dim": 0}, "toy: encoder: dim must be positive, got 0"),
        ({"encoder": 3}, "toy: encoder takes a name or fields, not 3"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(params: dict, message: str) -> None:
    with pytest.raises(HarnessError) as caught:
        build(Toy, params)
    assert str(caught.value) == message


def test_a_slot_without_choices_takes_only_its_default_class() -> None:
    with pytest.raises(HarnessError, match="must be one of encoder"):
        build(Toy, {"encoder": "other"})
