"""ELECTRA variant of SSP pre-training: tokenizer training, RTD loss, weights, CLI, resume."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
import typer
from ssp_corpus import documents, write_corpus
from typer.testing import CliRunner

from ctxsent.cli import pretrain, pretrain_data
from ctxsent.corpus.tokenizer_training import SPECIALS, train_wordpiece
from ctxsent.errors import InputError
from ctxsent.objectives.electra import ElectraObjective, ElectraSize, replaced_token_loss
from ctxsent.objectives.ssp import SspConfig
from ctxsent.objectives.ssp_data import TOKENIZER_DIR, build_ssp_dataset, load_ssp_dataset
from ctxsent.tasks.as2_records import As2Record
from ctxsent.training.ssp_pretrain import SspPretrainConfig, ssp_objective

TINY = ElectraSize(
    hidden=32, layers=2, heads=2, intermediate=64, embedding=16, generator_fraction=0.5
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "c", documents(40, seed=1))


@pytest.fixture(scope="module")
def data(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("ssp") / "dpc"
    build_ssp_dataset(corpus, out, SspConfig(block_size=8, max_length=64), vocab_size=150)
    return out


def test_tokenizer_is_bert_style_deterministic_and_round_trips(corpus, tmp_path):
    from transformers import AutoTokenizer

    train_wordpiece(corpus, tmp_path / "a", vocab_size=120)
    train_wordpiece(corpus, tmp_path / "b", vocab_size=120)
    assert (tmp_path / "a/tokenizer.json").read_bytes() == (
        tmp_path / "b/tokenizer.json"
    ).read_bytes()
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "a")
    assert len(tokenizer) == 120
    assert tokenizer.convert_tokens_to_ids(list(SPECIALS)) == [0, 1, 2, 3, 4]
    assert (tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.mask_token_id) == (0, 2, 4)
    text = "The KEEPER of the lamp tower d7 p2 s3"
    ids = tokenizer(text, "sea")["input_ids"]
    assert ids[0] == 2 and ids.count(3) == 2 and tokenizer.unk_token_id not in ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == text.lower() + " sea"
    assert len(tokenizer.tokenize("keeper")) == 1  # frequent words become single pieces


def test_tokenizer_training_refuses_bad_input(corpus, tmp_path):
    with pytest.raises(InputError, match="vocab_size.*must exceed 5"):
        train_wordpiece(corpus, tmp_path / "t", vocab_size=5)
    with pytest.raises(InputError, match="vocab_size.*too small.*characters") as error:
        train_wordpiece(corpus, tmp_path / "t", vocab_size=30)
    assert error.value.field == "vocab_size"
    empty = write_corpus(tmp_path / "empty", [[[]], []])
    with pytest.raises(InputError, match="no sentences") as error:
        train_wordpiece(empty, tmp_path / "t", vocab_size=100)
    assert error.value.path == str(empty)
    with pytest.raises(InputError, match="not a corpus folder"):
        train_wordpiece(tmp_path, tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_rtd_loss_labels_replaced_tokens_ignores_padding_and_lucky_samples():
    original = torch.tensor([[2, 10, 11, 12, 3, 0, 0], [2, 13, 14, 3, 0, 0, 0]])
    corrupted = original.clone()
    corrupted[0, 1] = 15  # replaced
    corrupted[0, 2] = 11  # sampled the original token: counts as original
    corrupted[1, 5] = 9  # padding: ignored whatever it holds
    attention = (torch.arange(7) < torch.tensor([[5], [4]])).long()
    logits = torch.randn(2, 7)
    loss = replaced_token_loss(logits, original, corrupted, attention)
    real = [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0), (1, 1), (1, 2), (1, 3)]
    expected = torch.stack(
        [
            F.binary_cross_entropy_with_logits(logits[r, c], torch.tensor(float((r, c) == (0, 1))))
            for r, c in real
        ]
    ).mean()
    assert torch.allclose(loss, expected)
    logits[:, 5:] = 1e4  # padding logits change nothing
    assert torch.allclose(replaced_token_loss(logits, original, corrupted, attention), expected)


def _module(data, tmp_path, **weights):
    from transformers import AutoTokenizer

    from ctxsent.models.cross_encoder import CrossEncoderRanker
    from ctxsent.models.transformer_ranker import RankerConfig
    from ctxsent.objectives.electra import new_discriminator

    tokenizer = AutoTokenizer.from_pretrained(data / TOKENIZER_DIR)
    torch.manual_seed(0)
    model = new_discriminator(TINY, tokenizer)
    ranker = CrossEncoderRanker(model, tokenizer, RankerConfig("tiny", True, 64))
    config = SspPretrainConfig(electra=TINY, max_length=64, **weights)
    return ssp_objective(ranker, config, ElectraObjective(model, 0.5)).eval()


def _batch(data):
    from ctxsent.models.segments import pad_batch

    dataset, _ = load_ssp_dataset(data)
    rows = dataset[:6]
    encoded = list(zip(rows["input_ids"], rows["token_type_ids"], strict=True))
    return {"features": pad_batch(encoded, 0), "labels": torch.tensor(rows["label"]).float()}


def _losses(module, batch):
    rng = torch.Generator().manual_seed(3)
    with torch.no_grad():
        return module(batch, rng)


def test_generator_shares_embeddings_and_loss_weights_apply(data, tmp_path):
    batch = _batch(data)
    module = _module(data, tmp_path)
    discriminator, generator = module.model.model, module.electra.generator
    assert generator.electra.embeddings is discriminator.electra.embeddings
    assert (
        generator.generator_lm_head.weight
        is discriminator.electra.embeddings.word_embeddings.weight
    )
    assert generator.config.hidden_size == 16 and discriminator.config.type_vocab_size == 3
    names = [name for name, _ in module.named_parameters()]
    assert not any(".embeddings." in n for n in names if n.startswith("electra.generator"))
    default = _losses(module, batch)
    assert set(default) == {"loss", "mlm", "rtd", "ssp", "accuracy"}
    parts = default["mlm"], default["rtd"], default["ssp"]
    assert all(part > 0 for part in parts)
    assert torch.allclose(default["loss"], parts[0] + 50 * parts[1] + parts[2])
    module.weights = {"mlm": 1.0, "rtd": 10.0, "ssp": 2.0}
    other = _losses(module, batch)
    assert torch.allclose(default["loss"] - other["loss"], 40 * parts[1] - parts[2])
    assert math.isclose(float(other["rtd"]), float(parts[1]))


def test_electra_cpu_preset_runs_from_the_cli_and_fine_tunes_as_contextual_ranker(tmp_path):
    from transformers import AutoTokenizer

    from ctxsent.models.registry import load_model_folder as load

    # 8 documents (100 examples): the run ends scoring every example no step drew with
    # the preset's 4-layer, 256-wide model
    corpus = write_corpus(tmp_path / "c", documents(8, seed=1))

    app = typer.Typer()
    app.command("data")(pretrain_data.ssp)
    app.command("train")(pretrain.ssp)
    runner = CliRunner()
    data_args = [
        "data",
        "--corpus",
        str(corpus),
        "--out",
        str(tmp_path / "d"),
        "--max-length",
        "64",
    ]
    built = runner.invoke(app, [*data_args, "--train-tokenizer", "150", "--block-size", "10"])
    assert built.exit_code == 0, built.output
    train = ["train", "--data", str(tmp_path / "d"), "--out", str(tmp_path / "r")]
    options = ["--max-steps", "2", "--batch-size", "4", "--save-every", "2", "--precision", "fp32"]
    result = runner.invoke(
        app, [*train, "--preset", "ssp-dpc-electra-cpu", *options, "--accelerator", "cpu"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "r" / "run.json").read_text())
    assert summary["progress"]["steps"] == 2
    assert summary["settings"]["config"]["electra"]["layers"] == 4
    assert all(summary["metrics"]["train"][k] > 0 for k in ("mlm", "rtd", "ssp"))
    # what 'ctxsent finetune as2 --init OUT/model --contextual' does
    ranker = load(tmp_path / "r" / "model").with_context(True)
    data_tokenizer = AutoTokenizer.from_pretrained(tmp_path / "d" / TOKENIZER_DIR)
    assert ranker.model.config.model_type == "electra" and type(ranker.tokenizer).__name__ in (
        "BertTokenizer",  # transformers 5
        "BertTokenizerFast",
    )
    assert ranker.tokenizer.get_vocab() == data_tokenizer.get_vocab()
    assert len(data_tokenizer) <= 150 and ranker.model.config.vocab_size == len(data_tokenizer)
    records = [
        As2Record("q1", "where is the lamp?", "the lamp is in the tower.", 1, previous="a keeper."),
        As2Record("q1", "where is the lamp?", "the sea is grey.", 0, next="stone."),
    ]
    scores = ranker.predict(records)
    assert scores.shape == (2,) and all(map(math.isfinite, scores))
    features = ranker.features(records)
    assert features["token_type_ids"].max() == 2
    with torch.no_grad():
        typed = ranker(features)
        untyped = ranker({k: v for k, v in features.items() if k != "token_type_ids"})
    assert not torch.allclose(typed, untyped)  # segment ids reach the discriminator
    bad = runner.invoke(app, [*train, "--preset", "ssp-dpc-electra-cpu", "--backbone", "minilm"])
    assert "takes no backbone" in str(bad.exception)


def test_step_counts_are_what_each_part_averages_over(data, tmp_path):
    """Counted over a step of 2 batches whose other batch counts nothing, every part is
    twice its mean over this batch; a count that is not the loss's own breaks that."""
    from ctxsent.objectives.global_batch import begin_accumulated_step, end_accumulated_step

    batch, module = _batch(data), _module(data, tmp_path)
    plain = _losses(module, batch)
    counts = module.step_counts(batch, torch.Generator().manual_seed(3))
    assert counts["ssp"] == 6 and counts["rtd"] == int(batch["features"]["attention_mask"].sum())
    begin_accumulated_step(counts, 2, "cpu")
    try:
        counted = _losses(module, batch)
    finally:
        end_accumulated_step()
    for part in ("mlm", "rtd", "ssp"):
        torch.testing.assert_close(counted[part], 2 * plain[part])
