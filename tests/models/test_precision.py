import itertools

import numpy as np
import pytest
import torch

from ctxsent.errors import InputError
from ctxsent.models import precision
from ctxsent.models.baseline_rankers import BM25Ranker
from ctxsent.models.bi_encoder import BiEncoderRanker
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.pipeline import PipelineRanker
from ctxsent.models.pooling import masked_max, masked_mean
from ctxsent.tasks.as2_records import As2Record
from synthetic import spread_attention


def test_cpu_bf16_override_decides_what_auto_means(monkeypatch):
    cpu = torch.device("cpu")
    monkeypatch.setenv("CTXSENT_CPU_BF16", "1")
    assert precision.resolve_precision("auto", cpu) == "bf16"
    monkeypatch.setenv("CTXSENT_CPU_BF16", "0")
    assert precision.resolve_precision("auto", cpu) == "fp32"
    assert precision.resolve_precision("bf16", cpu) == "bf16"  # a named precision is kept


def test_cpu_bf16_override_refuses_other_values(monkeypatch):
    monkeypatch.setenv("CTXSENT_CPU_BF16", "yes")
    with pytest.raises(ValueError, match="CTXSENT_CPU_BF16"):
        precision.resolve_precision("auto", torch.device("cpu"))


def _records(count: int) -> list[As2Record]:
    """``count`` distinct candidates for four questions (all different word sequences)."""
    sequences = itertools.islice(itertools.permutations(WORDS, 4), count)
    return [
        As2Record(f"q{i % 4}", f"what is the {WORDS[i % 4]}?", " ".join(words), i % 2)
        for i, words in enumerate(sequences)
    ]


WORDS = [
    *("tower", "light", "river", "stone", "harbour", "keeper", "lamp"),
    *("coast", "ship", "wind", "night", "tall", "red"),
]


def _distinct(scores: np.ndarray) -> int:
    return len(np.unique(scores))


@pytest.mark.parametrize("kind", ["cross-encoder", "cascade"])
def test_bf16_scores_keep_fp32_resolution(kind, tiny_bert, tiny_bert6):
    """Layers in bf16, heads in fp32: 100 candidates whose scores differ in fp32 do not tie in
    bf16. Rounded to bf16 (8 bits of mantissa) their logits, spread over about one unit, would
    fall into ~150 values and tie by the dozen; in fp32 a chance tie has odds of ~1e-4, and
    one is allowed."""
    records = _records(100)
    torch.manual_seed(0)
    if kind == "cascade":
        ranker = CascadeRanker.from_backbone(str(tiny_bert6), max_length=32)
    else:
        ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32)
        with torch.no_grad():
            ranker.model.classifier.weight.mul_(100)  # logits over about one unit
    spread_attention(ranker.model.base_model)
    ranker.precision = "fp32"
    fp32 = ranker.predict(records)
    ranker.precision = "bf16"
    bf16 = ranker.predict(records)
    assert _distinct(fp32) >= len(records) - 1
    assert _distinct(bf16) >= len(records) - 1


@pytest.mark.parametrize("pool", [masked_mean, masked_max])
def test_pooling_of_bf16_states_is_fp32(pool):
    """Pooled vectors (the bi-encoder's and cascade's means, the word-level encoders'
    mean-max) keep fp32 resolution when the layers ran in bf16."""
    hidden = torch.randn(3, 50, 16).bfloat16()
    mask = torch.arange(50) < torch.tensor([[50], [7], [1]])
    pooled = pool(hidden, mask)
    assert pooled.dtype == torch.float32
    torch.testing.assert_close(pooled, pool(hidden.double(), mask))


def test_auto_is_said_once_on_stderr(tiny_bert, capsys):
    precision.announce_auto.cache_clear()
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert))
    assert ranker.precision == "auto"  # the default
    ranker.predict(_records(4))
    ranker.predict(_records(4))
    said = capsys.readouterr().err.splitlines()
    assert said == ["ctxsent: precision auto -> fp32 (this CPU lacks native bf16)"]  # conftest


def test_set_precision_gives_every_pipeline_stage_the_choice(tiny_bert):
    retriever = BiEncoderRanker.from_backbone(str(tiny_bert))
    reranker = CrossEncoderRanker.from_backbone(str(tiny_bert))
    pipeline = precision.set_precision(
        PipelineRanker([BM25Ranker(), retriever], reranker, 3), "bf16"
    )
    assert (retriever.precision, reranker.precision, pipeline.precision) == ("bf16",) * 3
    assert precision.set_precision(BM25Ranker(), "fp32")
    with pytest.raises(InputError, match="precision.*BM25Ranker runs in its own precision"):
        precision.set_precision(BM25Ranker(), "bf16")
    with pytest.raises(InputError, match="must be one of"):
        precision.set_precision(reranker, "fp64")


def test_int8_is_refused_where_it_would_silently_run_fp32(tiny_bert):
    encoder = precision.set_precision(BiEncoderRanker.from_backbone(str(tiny_bert)), "int8")
    with pytest.raises(InputError, match="precision.*int8 is for cross-encoders"):
        encoder.encode(["a lighthouse"])
