"""The one preset registry (:mod:`ctxsent.presets`), ``--set`` and ``ctxsent presets``."""

from __future__ import annotations

import dataclasses
import json
from itertools import combinations
from typing import Literal

import pytest
from typer.testing import CliRunner

from ctxsent.cli import app
from ctxsent.errors import InputError
from ctxsent.presets import FAMILIES, apply_overrides, get_preset, presets

#: what each family's CPU rule may change; everything else is the paper preset's
CPU_RULE = {
    "cross-thought": {
        "sequences_per_sample", "batch_size", "learning_rate", "warmup_steps", "max_steps",
        "from_backbone",
    },
    "ssp": {"learning_rate", "batch_size", "max_steps", "warmup_steps", "checkpoint_every",
            "electra"},
    "encoder": {
        "embedding_dim", "hidden_size", "ffn_size", "heads", "dropout", "decoder_dims",
        "batch_size", "vocab_size", "max_sentences", "max_minutes", "epochs", "checkpoint_every",
    },
}  # fmt: skip


#: Paper presets without a ``-cpu`` variant: the fine-tunes and AS2 recipes are sized for a
#: CPU already; SSP's ELECTRA-small presets are the GPU-only ones.
WITHOUT_CPU_VARIANT = {
    "cross-thought-finetune": {"cross-thought-as2", "cross-thought-pairs"},
    "ssp": {f"ssp-{task}-electra-small" for task in ("sdc", "dpc", "dslc", "all")},
    "as2": {"as2-bi-encoder", "as2-cross-encoder", "as2-cross-encoder-listwise",
            "as2-contextual", "as2-cascade"},
}  # fmt: skip


def differing(first, second) -> set[str]:
    one, two = dataclasses.asdict(first), dataclasses.asdict(second)
    return {key for key in one if one[key] != two[key]}


def cpu_pairs(family: str) -> list[tuple]:
    """(paper preset, its -cpu variant) of ``family``."""
    names = {p.name: p for p in presets(family)}
    return [(p, names[f"{p.name}-cpu"]) for p in names.values() if f"{p.name}-cpu" in names]


def run_cli(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("family", FAMILIES)
def test_every_preset_builds_its_config(family):
    registered = presets(family)
    assert registered and all(p.family == family and p.description for p in registered)
    assert len({type(p.config) for p in registered}) == 1
    for preset in registered:
        assert dataclasses.replace(preset.config) == preset.config  # __post_init__ accepts it
        assert get_preset(preset.name) is preset
    paper = {p.name for p in registered if not p.name.endswith("-cpu")}
    assert paper - {first.name for first, _ in cpu_pairs(family)} == WITHOUT_CPU_VARIANT.get(
        family, set()
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_cpu_variants_change_only_the_rule_and_keep_what_distinguishes_presets(family):
    pairs = cpu_pairs(family)
    for paper, cpu in pairs:
        assert differing(paper.config, cpu.config) <= CPU_RULE[family], paper.name
    for (first, first_cpu), (second, second_cpu) in combinations(pairs, 2):
        if getattr(first.config, "model", None) != getattr(second.config, "model", None):
            continue  # RNN-CNN vs AAE: different models, different CPU widths
        paper_diff = differing(first.config, second.config)
        assert paper_diff <= differing(first_cpu.config, second_cpu.config), (
            first.name,
            second.name,
        )
        assert paper_diff, (first.name, second.name)  # no two presets are the same


def test_paper_presets_keep_the_papers_values():
    cross = get_preset("cross-thought-5-64", "cross-thought").config
    assert (cross.num_special, cross.sequences_per_sample, cross.batch_size) == (5, 500, 128)
    ssp = get_preset("ssp-dpc", "ssp").config
    assert (ssp.batch_size, ssp.max_steps, ssp.warmup_steps) == (4096, 400_000, 10_000)
    large = get_preset("rnn-cnn-large", "encoder").config
    assert (large.hidden_size, large.batch_size, large.learning_rate) == (1200, 512, 5e-4)


def test_overrides_are_typed_by_the_fields():
    encoder = get_preset("rnn-cnn-small-cpu", "encoder").config
    changed = apply_overrides(
        encoder, ["decoder_dims=8,16", "max_minutes=2", "max_sentences=none", "hidden-size=64"]
    )
    assert (changed.decoder_dims, changed.max_minutes) == ((8, 16), 2.0)
    assert (changed.max_sentences, changed.hidden_size) == (None, 64)
    cross = get_preset("mlm-1-64-cpu", "cross-thought").config
    assert apply_overrides(cross, ["from_backbone=false"]).from_backbone is False
    ssp = get_preset("ssp-dpc-cpu", "ssp").config
    assert apply_overrides(ssp, ["devices=2"]).devices == 2
    assert apply_overrides(ssp, ["devices=auto", "seed=3", "seed=4"]).seed == 4
    assert apply_overrides(ssp, []) is ssp
    electra = get_preset("ssp-dpc-electra", "ssp").config
    tiny = apply_overrides(electra, ["electra.hidden=32", "electra.layers=2", "batch_size=8"])
    assert (tiny.electra.hidden, tiny.electra.layers, tiny.batch_size) == (32, 2, 8)
    assert tiny.electra.heads == electra.electra.heads  # the rest of the size is the preset's


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        ("bogus=1", "field 'bogus': unknown setting; known: objective, backbone,"),
        ("batch_size=big", "field 'batch_size': expected int, got 'big'"),
        ("batch_size=0", "field 'batch_size': must be >= 1, got 0"),  # __post_init__
        ("readout=max", "field 'readout': expected cls or mean"),
        ("electra=small", "field 'electra': expected ElectraSize | None, got 'small'"),
        ("batch_size", "field 'set': expected KEY=VALUE, got 'batch_size'"),
        ("electra.hidden=32", "field 'electra': electra holds no settings to set by electra.h"),
    ],
)
def test_overrides_refuse_unknown_keys_and_bad_values_in_one_line(assignment, expected):
    with pytest.raises(InputError) as caught:
        apply_overrides(get_preset("ssp-dpc-cpu", "ssp").config, [assignment])
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_literal_fields_are_checked_by_the_config():
    @dataclasses.dataclass
    class Config:
        mode: Literal["a", "b"] = "a"

        def __post_init__(self):
            if self.mode not in ("a", "b"):
                raise InputError(f"expected a or b, got {self.mode!r}", field="mode")

    assert apply_overrides(Config(), ["mode=b"]).mode == "b"
    with pytest.raises(InputError, match="field 'mode': expected a or b"):
        apply_overrides(Config(), ["mode=c"])


def test_unknown_preset_names_the_family_s_presets():
    with pytest.raises(InputError) as caught:
        get_preset("ssp-nsp", "ssp")
    assert "unknown preset 'ssp-nsp'; known ssp presets: ssp-sdc," in str(caught.value)
    assert "mlm-1-64" not in str(caught.value)
    with pytest.raises(InputError, match="unknown preset family 'glove'"):
        presets("glove")


def test_presets_command_lists_a_family():
    result = run_cli("presets", "--family", "ssp")
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert {family for _, family, _ in rows} == {"ssp"}
    assert [name for name, _, _ in rows] == [p.name for p in presets("ssp")]
    listed = run_cli("presets", "--json")
    records = [json.loads(line) for line in listed.stdout.splitlines()]
    assert {r["family"] for r in records} == set(FAMILIES)
    assert run_cli("presets", "--family", "glove").exit_code == 2


@pytest.mark.parametrize(
    "command",
    [
        ["pretrain", "cross-thought", "--preset", "mlm-1-64-cpu", "--data"],
        ["pretrain", "ssp", "--preset", "ssp-dpc-cpu", "--data"],
        ["pretrain", "encoder", "--preset", "rnn-cnn-small-cpu", "--data"],
        ["pretrain-data", "cross-thought", "--preset", "mlm-1-64-cpu", "--corpus"],
        ["pretrain-data", "encoder", "--preset", "rnn-cnn-small-cpu", "--corpus"],
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_pretraining_commands_refuse_unknown_settings_before_loading_data(command, tmp_path):
    result = run_cli(*command, "/nonexistent", "--out", tmp_path / "run", "--set", "bogus=1")
    assert result.exit_code == 2
    assert "error: field 'bogus': unknown setting; known:" in result.stderr
    assert "nonexistent" not in result.stderr  # the data was never opened


def test_set_is_applied_after_the_command_s_own_options():
    from ctxsent.cli.pretrain import configured

    config = configured("mlm-1-64-cpu", "cross-thought", {"max_steps": 5}, ["max_steps=7"])
    assert config.max_steps == 7
    assert configured("mlm-1-64-cpu", "cross-thought", {"max_steps": 5}, None).max_steps == 5


def test_settings_list_the_configs_own_fields_before_the_shared_run_settings():
    from ctxsent.presets import setting_names
    from ctxsent.training.encoder_presets import EncoderPretrainConfig

    names = setting_names(EncoderPretrainConfig())
    assert names[:2] == ["model", "vocab_size"] and names.index("precision") == 15
    shared = ["accumulate", "accelerator", "devices", "strategy", "num_nodes", "keep_checkpoints"]
    assert names[-9:] == [*shared, "eval", "eval_every", "patience"]  # precision: its own
