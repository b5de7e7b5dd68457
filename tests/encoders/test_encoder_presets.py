"""The ``-cpu`` presets keep what distinguishes their paper presets."""

from dataclasses import asdict
from itertools import combinations

import pytest

from ctxsent.presets import get_preset, presets

PAPER = [p.name for p in presets("encoder") if not p.name.endswith("-cpu")]
WIDTHS = ("hidden_size", "ffn_size", "decoder_dims")


def config(name: str):
    return get_preset(name, "encoder").config


def family_base(name: str) -> str:
    return "mean-max-aae" if config(name).model == "mean-max-aae" else "rnn-cnn-small"


def test_distinct_paper_presets_have_distinct_cpu_variants():
    for first, second in combinations(PAPER, 2):
        assert config(first) != config(second)
        assert config(f"{first}-cpu") != config(f"{second}-cpu"), (first, second)


@pytest.mark.parametrize("name", PAPER)
def test_cpu_variant_keeps_the_distinguishing_settings_widths_scaled(name):
    base = asdict(config(family_base(name)))
    base_cpu = asdict(config(f"{family_base(name)}-cpu"))
    paper, cpu = asdict(config(name)), asdict(config(f"{name}-cpu"))
    distinguishing = {key for key in paper if paper[key] != base[key]}
    for key in distinguishing:
        if key in WIDTHS:  # the same ratio to the family's CPU width as in the paper
            assert cpu[key] * base[key] == paper[key] * base_cpu[key], key
        else:
            assert cpu[key] == paper[key], key
    assert {key for key in cpu if cpu[key] != base_cpu[key]} == distinguishing


def test_large_rnn_cnn_cpu_scales_the_gru_like_the_small_one():
    assert config("rnn-cnn-small-cpu").hidden_size == 128
    assert config("rnn-cnn-large-cpu").hidden_size == 512  # 1200 x 128 / 300
