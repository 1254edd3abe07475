"""The shared training loop (toolkit.training) against a hand-written loop on a tiny model."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from toolkit.training import train_epochs  # noqa: E402


def _data() -> tuple:
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(12, 3, generator=generator)
    targets = inputs @ torch.tensor([1.0, -2.0, 0.5]) + 0.1
    return inputs, targets


def _batches(epoch: int) -> list[slice]:
    return [slice(0, 4), slice(4, 8), slice(8, 12)] if epoch % 2 == 0 else [slice(8, 12), slice(0, 8)]


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(3, 1)


@pytest.mark.parametrize("grad_clip", [None, 0.05])
def test_the_loop_equals_a_plain_loop(grad_clip: float | None) -> None:
    inputs, targets = _data()

    def loss_of(model: torch.nn.Module, rows: slice) -> torch.Tensor:
        return ((model(inputs[rows]).squeeze(1) - targets[rows]) ** 2).mean()

    plain = _model()
    optimizer = torch.optim.SGD(plain.parameters(), lr=0.1)
    expected = []
    for epoch in range(3):
        losses = []
        for rows in _batches(epoch):
            optimizer.zero_grad()
            loss = loss_of(plain, rows)
            loss.backward()
            if grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(plain.parameters(), grad_clip)
            optimizer.step()
            losses.append(float(loss.detach()))
        expected.append(sum(losses) / len(losses))

    model = _model()
    steps = []
    history = train_epochs(
        network=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        epochs=3,
        epoch_batches=_batches,
        batch_loss=lambda rows: loss_of(model, rows),
        device="cpu",
        mixed_precision=True,  # ignored on CPU: no scaler, no autocast
        label="toy",
        grad_clip=grad_clip,
        after_step=steps.append,
    )
    assert [h["batches"] for h in history] == [3, 2, 3]
    assert [h["loss"] for h in history] == [round(x, 6) for x in expected]
    assert len(steps) == 8
    for trained, reference in zip(model.parameters(), plain.parameters(), strict=True):
        assert torch.equal(trained, reference)


def test_batches_may_come_from_a_generator() -> None:
    model = _model()
    inputs, targets = _data()
    history = train_epochs(
        network=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        epochs=1,
        epoch_batches=lambda epoch: (rows for rows in _batches(epoch)),
        batch_loss=lambda rows: ((model(inputs[rows]).squeeze(1) - targets[rows]) ** 2).mean(),
        device="cpu",
        mixed_precision=False,
        label="toy",
    )
    assert history[0]["batches"] == 3
