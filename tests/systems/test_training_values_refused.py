"""Values that would train a neural system wrongly or fail deep inside torch are refused when the system is built,
in one line naming the field (audit 22): a negative grad_clip had trained varlen_linker uphill without a word
(MRR 0.436 -> 0.300), hidden state 0 made every siamese_bilstm score NaN, and the rest ended in tracebacks after the
data was read."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")

from core.errors import HarnessError  # noqa: E402
from harness.params import build  # noqa: E402
from harness.registry import system_class  # noqa: E402

REFUSED = [
    ("varlen_linker", {"training.grad_clip": -1.0}, "training: grad_clip must be positive and finite, got -1.0"),
    ("varlen_linker", {"training.grad_clip": 0.0}, "training: grad_clip must be positive and finite, got 0.0"),
    ("varlen_linker", {"encoder.vocab_size": 3}, "encoder: vocab_size must be at least 8, got 3"),
    ("char_lm", {"preset.grad_clip": -1.0}, "grad_clip must be positive and finite, got -1.0"),
    ("char_lm", {"preset.lr": 0.0}, "lr must be positive and finite, got 0.0"),
    ("siamese_bilstm", {"training.lr": -1.0}, "training: lr must be positive and finite, got -1.0"),
    ("siamese_bilstm", {"training.lr": math.inf}, "training: lr must be positive and finite, got inf"),
    ("varlen_linker", {"training.lr": math.nan}, "training: lr must be positive and finite, got nan"),
    ("siamese_bilstm", {"encoder.layers": [0]}, "encoder: layers must be hidden-state indices from 1 up"),
    ("siamese_bilstm", {"encoder.max_tokens": 0}, "encoder: max_tokens must be at least 3"),
    ("siamese_bilstm", {"encoder.stride": 0}, "encoder: stride must be at least 1 or None, got 0"),
    ("siamese_bilstm", {"encoder.max_chunks_per_text": 0}, "max_chunks_per_text must be at least 1 or None, got 0"),
    ("siamese_bilstm", {"encode_batch_size": 0}, "encode_batch_size must be at least 1, got 0"),
    ("encoder_wccn", {"encoder.layers": [0, 2]}, "encoder: layers must be hidden-state indices from 1 up"),
    ("encoder_wccn", {"encode_batch_size": 0}, "encode_batch_size must be at least 1, got 0"),
    ("nbcsauthor", {"training.lr": 0.0}, "training: lr must be positive and finite, got 0.0"),
    ("nbcsauthor", {"encoder.dropout": 1.5}, r"encoder: dropout must lie in \[0, 1\), got 1.5"),
    ("siamese_bilstm", {"loss.positive_margin": -1.0}, "loss: the margins must satisfy -1 <= negative_margin <"),
    ("varlen_linker", {"loss.margin": -1.0}, "loss: margin must be >= 0 and finite, got -1.0"),
    ("varlen_linker", {"loss": "topk", "loss.margin": -0.5}, "loss: margin must be >= 0 and finite, got -0.5"),
    ("nbcsauthor", {"loss": "cosface", "loss.margin": -0.1}, "loss: margin must be >= 0 and scale > 0"),
    ("nbcsauthor", {"loss": "contrastive", "loss.neg_margin": 0.0}, "loss: the margins must satisfy 0 <= pos_margin"),
    ("nbcsauthor", {"encoder.layers": 0}, "encoder: layers must be at least 1, got 0"),
    ("sysml", {"encoder.heads": 0}, "encoder: heads must be at least 1, got 0"),
]


@pytest.mark.parametrize(("system", "params", "message"), REFUSED, ids=[f"{s}-{list(p)[-1]}" for s, p, _ in REFUSED])
def test_a_value_that_would_train_wrongly_is_refused_when_the_system_is_built(system, params, message):
    with pytest.raises(HarnessError, match=message):
        build(system_class(system), params)


def test_an_encoder_given_more_tokens_than_its_positions_is_refused_before_any_text_is_encoded(tmp_path):
    """Was a tensor-size traceback (12010 vs 128) once the texts were tokenised."""
    from helpers.tiny_encoder import make_tiny_encoder

    from toolkit.layer_features import LayerFeatures

    encoder = make_tiny_encoder(tmp_path / "encoder")  # 128 positions
    with pytest.raises(HarnessError, match="encoder.max_tokens=129 is more than the 128 positions"):
        LayerFeatures(str(encoder), max_tokens=129, cache_dir=tmp_path / "cache")
    assert LayerFeatures(str(encoder), max_tokens=128, cache_dir=tmp_path / "cache").max_tokens == 128
    # a RoBERTa-like encoder's first pad_token_id + 1 positions hold no token (514 positions, 512 tokens)
    import json
    import shutil

    roberta = shutil.copytree(encoder, tmp_path / "roberta-like")
    config = json.loads((roberta / "config.json").read_text(encoding="utf-8"))
    (roberta / "config.json").write_text(json.dumps(config | {"model_type": "roberta", "pad_token_id": 1}))
    with pytest.raises(HarnessError, match="encoder.max_tokens=127 is more than the 126 positions"):
        LayerFeatures(str(roberta), max_tokens=127, cache_dir=tmp_path / "cache")
