"""Loading is strict: a folder without its tokenizer files, or weights without some tensors,
is a ModelFolderError naming what is missing, never a model with [UNK]s or random weights."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

import ctxsent
from ctxsent.errors import ModelFolderError
from ctxsent.models.bi_encoder import BiEncoder, BiEncoderRanker
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.models.cross_thought import CrossThoughtConfig, CrossThoughtModel, CrossThoughtRanker
from ctxsent.models.rnn_cnn import RnnCnnConfig, RnnCnnEncoder
from ctxsent.models.sequential import SequentialRanker
from ctxsent.text.vocabulary import SPECIALS, Vocabulary


def _cross_thought(tiny_bert: Path) -> CrossThoughtModel:
    config = CrossThoughtConfig(backbone=str(tiny_bert), pretrained=False, num_special=1)
    return CrossThoughtModel.build(config)


def _sequential(tiny_bert: Path) -> SequentialRanker:
    return SequentialRanker([CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32)] * 2)


BUILDERS = {
    "bi-encoder": lambda bert: BiEncoderRanker.from_backbone(str(bert), max_length=32),
    "cross-encoder": lambda bert: CrossEncoderRanker.from_backbone(str(bert), max_length=32),
    "cascade": lambda bert: CascadeRanker.from_backbone(str(bert), max_length=32),
    "cross-thought": _cross_thought,
    "cross-thought-ranker": lambda bert: CrossThoughtRanker(_cross_thought(bert)),
    "sequential": _sequential,
}
#: Where each kind keeps its tokenizer and its weights.
INNER = {"sequential": "stage-1"}


@pytest.fixture(scope="module")
def saved(tiny_bert, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    return {kind: build(tiny_bert).save_pretrained(root / kind) for kind, build in BUILDERS.items()}


def load_error(folder: Path, load=ctxsent.load) -> str:
    with pytest.raises(ModelFolderError) as caught:
        load(folder)
    message = str(caught.value)
    assert "\n" not in message
    return message


def drop_tensors(weights: Path, keep: int = 1) -> list[str]:
    """Rewrite ``weights`` with its first ``keep`` tensors only; return the dropped names."""
    tensors = load_file(weights)
    names = sorted(tensors)
    save_file({name: tensors[name] for name in names[:keep]}, weights)
    return names[keep:]


@pytest.mark.parametrize("kind", BUILDERS)
def test_a_folder_without_its_tokenizer_files_is_refused(saved, kind, tmp_path):
    folder = Path(shutil.copytree(saved[kind], tmp_path / kind))
    inner = folder / INNER.get(kind, "")
    assert type(ctxsent.load(folder)).kind == kind
    (inner / "tokenizer.json").unlink()
    assert "missing tokenizer vocabulary file (tokenizer.json or vocab.txt)" in load_error(folder)
    (inner / "tokenizer_config.json").unlink()
    assert "missing tokenizer file tokenizer_config.json" in load_error(folder)


@pytest.mark.parametrize("kind", BUILDERS)
def test_weights_missing_most_tensors_are_refused(saved, kind, tmp_path):
    folder = Path(shutil.copytree(saved[kind], tmp_path / kind))
    weights = folder / INNER.get(kind, "") / "model.safetensors"
    dropped = drop_tensors(weights)
    message = load_error(folder)
    assert f"{len(dropped)} missing weight tensors: {dropped[0]}" in message
    assert weights.name in message or str(weights.parent) in message


def test_a_word_level_encoder_missing_tensors_is_refused(tmp_path):
    vocabulary = Vocabulary([*SPECIALS, "the", "sea"])
    RnnCnnEncoder(RnnCnnConfig(len(vocabulary), 8, hidden_size=6), vocabulary).save_pretrained(
        tmp_path / "rnn"
    )
    dropped = drop_tensors(tmp_path / "rnn" / "model.safetensors")
    assert f"{len(dropped)} missing weight tensors: {dropped[0]}" in load_error(tmp_path / "rnn")


def test_a_bi_encoder_folder_is_loaded_strictly(tiny_bert, tmp_path):
    folder = Path(shutil.copytree(tiny_bert, tmp_path / "bert"))
    load = lambda path: BiEncoder.from_pretrained(str(path))  # noqa: E731
    dropped = drop_tensors(folder / "model.safetensors", keep=3)
    assert f"{len(dropped)} missing weight tensors" in load_error(folder, load)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink()
    assert "tokenizer_config.json" in load_error(folder, load)


@pytest.mark.parametrize("kind", BUILDERS)
def test_every_saved_folder_has_a_model_card_naming_its_kind(saved, kind):
    card = (saved[kind] / "README.md").read_text()
    summary = type(ctxsent.load(saved[kind])).__doc__.strip().splitlines()[0]
    assert f"\n---\n\n# A ctxsent `{kind}` model\n\n{summary}\n" in card
    assert "## Use" in card
