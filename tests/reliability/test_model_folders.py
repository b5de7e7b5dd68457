"""Model folders load from safetensors only; corrupt, foreign or partial ones get a clear error."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import pytest
import torch

import ctxsent
from ctxsent.errors import ModelFolderError
from ctxsent.models.cascade import HEADS_FILE, CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.saving import MANIFEST, is_model_folder


@pytest.fixture(scope="module")
def saved(tiny_bert, tmp_path_factory) -> Path:
    """A saved tiny cross-encoder folder (copy it before damaging it)."""
    folder = tmp_path_factory.mktemp("saved") / "model"
    return CrossEncoderRanker.from_backbone(str(tiny_bert), max_length=32).save_pretrained(folder)


@pytest.fixture
def copy(saved, tmp_path) -> Path:
    return Path(shutil.copytree(saved, tmp_path / "model"))


class _Trap:
    """Unpickling this writes a marker file: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def write_trap(path: Path, marker: Path) -> None:
    with open(path, "wb") as handle:
        pickle.dump(_Trap(marker), handle)


def load_error(folder: Path) -> str:
    with pytest.raises(ModelFolderError) as caught:
        ctxsent.load(folder)
    return str(caught.value)


def test_an_intact_folder_loads(copy):
    assert isinstance(ctxsent.load(copy), CrossEncoderRanker)


def test_pickled_weights_alone_are_refused_and_never_unpickled(copy, tmp_path):
    marker = tmp_path / "unpickled"
    (copy / "model.safetensors").unlink()
    write_trap(copy / "pytorch_model.bin", marker)
    assert "no safetensors weights" in load_error(copy)
    assert not marker.exists()


def test_pickles_beside_safetensors_are_ignored(copy, tmp_path):
    marker = tmp_path / "unpickled"
    for name in ("pytorch_model.bin", "training_args.bin", "optimizer.pt"):
        write_trap(copy / name, marker)
    ctxsent.load(copy)
    assert not marker.exists()


@pytest.mark.parametrize(
    "damage",
    [b"", b"not a safetensors file at all", b"\xff" * 8 + b"{", "truncate"],
    ids=["empty", "text", "bad-header", "truncated"],
)
def test_corrupt_safetensors_gets_a_model_folder_error(copy, damage):
    weights = copy / "model.safetensors"
    if damage == "truncate":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    else:
        weights.write_bytes(damage)
    message = load_error(copy)
    assert str(copy) in message


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        ('{"kind": "cross-enc', "corrupt manifest"),
        (b"\xff\xfe\x00", "corrupt manifest"),
        ("[1, 2]", "no model kind"),
        ('{"name": "some-other-tool", "version": 3}', "no model kind"),
        ('{"kind": "cross-encoder", "format": 99, "config": {}}', "unsupported format"),
        ('{"kind": "word2vec", "format": 1, "config": {}}', "unknown model kind"),
        ('{"kind": "cross-encoder", "format": 1, "config": {"layers": 7}}', "config"),
        ('{"kind": "cross-encoder", "format": 1}', "config"),
        ('{"kind": "cross-encoder", "format": 1, "config": [1]}', "config"),
    ],
)
def test_foreign_or_corrupt_manifests_get_a_model_folder_error(copy, manifest, expected):
    path = copy / MANIFEST
    path.write_bytes(manifest if isinstance(manifest, bytes) else manifest.encode())
    assert expected in load_error(copy)


def test_a_folder_without_manifest_is_not_a_ctxsent_model(copy):
    (copy / MANIFEST).unlink()  # e.g. a plain HF or sentence-transformers folder
    assert "not a ctxsent model folder" in load_error(copy)
    assert "not a folder" in load_error(copy / "missing")


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json"])
def test_truncated_config_or_tokenizer_gets_a_model_folder_error(copy, name):
    path = copy / name
    path.write_text(path.read_text()[:40])
    assert "cannot load" in load_error(copy)


def test_a_cascade_with_corrupt_or_foreign_heads_gets_a_model_folder_error(tiny_bert, tmp_path):
    folder = CascadeRanker.from_backbone(str(tiny_bert), max_length=32).save_pretrained(
        tmp_path / "cascade"
    )
    heads = folder / HEADS_FILE
    intact = heads.read_bytes()
    heads.write_bytes(intact[:100])
    assert "cascade_heads" in load_error(folder)
    from safetensors.torch import save_file

    save_file({"something.else": torch.zeros(2)}, heads)
    assert "cascade_heads" in load_error(folder)


def test_a_crash_while_saving_leaves_no_folder_that_looks_complete(copy, tiny_bert, monkeypatch):
    ranker = ctxsent.load(copy)
    before = {p.name: p.read_bytes() for p in copy.iterdir()}

    def crash(folder: Path) -> None:
        (folder / "model.safetensors").write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(ranker, "save_weights", crash)
    with pytest.raises(OSError, match="disk full"):
        ranker.save_pretrained(copy)  # over an existing model: it must survive intact
    with pytest.raises(OSError, match="disk full"):
        ranker.save_pretrained(copy.parent / "fresh")
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == before
    assert not (copy.parent / "fresh").exists()
    leftovers = [p for p in os.listdir(copy.parent) if p != "model"]
    assert not any(is_model_folder(copy.parent / p) for p in leftovers)
    assert not leftovers


@pytest.mark.parametrize("kind", ["cross-encoder", "cascade", "bi-encoder"])
def test_max_length_is_bounded_by_the_backbones_positions_when_set_and_when_read(
    kind, tiny_bert, tmp_path
):
    import json

    from ctxsent.errors import InputError
    from ctxsent.models.bi_encoder import BiEncoderRanker

    build = {"cross-encoder": CrossEncoderRanker, "cascade": CascadeRanker}.get(
        kind, BiEncoderRanker
    ).from_backbone
    for bad, expected in ((257, "must be <= 256, the positions of"), (0, "integer >= 2")):
        with pytest.raises(InputError, match=expected) as refused:
            build(str(tiny_bert), max_length=bad)
        assert "field 'max_length'" in str(refused.value)
    ranker = build(str(tiny_bert), max_length=256)
    with pytest.raises(InputError, match="must be <= 256"):
        ranker.max_length = 100_000
    folder = ranker.save_pretrained(tmp_path / "model")
    for bad in (100_000, 0):  # a hand-edited manifest
        manifest = json.loads((folder / MANIFEST).read_text())
        manifest["config"]["max_length"] = bad
        (folder / MANIFEST).write_text(json.dumps(manifest))
        with pytest.raises(InputError, match="field 'max_length'"):
            ctxsent.load(folder)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_weights_holding_nan_or_infinity_are_refused_at_load(copy, bad):
    from safetensors.torch import load_file, save_file

    weights = load_file(copy / "model.safetensors")
    name = sorted(weights)[0]
    weights[name][0] = bad
    save_file(weights, copy / "model.safetensors")
    with pytest.raises(ModelFolderError, match="1 weight tensors hold NaN or infinity") as bad:
        ctxsent.load(copy)
    assert str(copy) in str(bad.value) and name.split(".")[-1] in str(bad.value)


def test_a_full_disk_under_safetensors_is_an_os_error_naming_the_model(
    saved, tmp_path, monkeypatch
):
    import errno

    import transformers.modeling_utils
    from safetensors import SafetensorError

    def full(*args, **kwargs):
        raise SafetensorError(
            'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No '
            'space left on device" })'
        )

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", full)
    with pytest.raises(OSError) as failed:
        ctxsent.load(saved).save_pretrained(tmp_path / "model")
    assert failed.value.errno == errno.ENOSPC and failed.value.filename == str(tmp_path / "model")
    assert os.listdir(tmp_path) == []
