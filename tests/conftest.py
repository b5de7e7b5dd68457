"""Shared fixtures: offline mode, the shared data folder, tiny random backbones."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# precision "auto" stays fp32 on every CPU, in this process and the ctxsent commands tests
# start, so no test depends on whether its machine has AVX512-BF16: a tiny random model at
# lr 3e-3 is unstable in bf16 (dev MAP 0.25-1.0 over three seeds and 1-2 threads where fp32
# gets 1.0; CI failed once at 0.58). Tests that want bf16 ask for it by name.
os.environ["CTXSENT_CPU_BF16"] = "0"
# Under pytest-xdist (``make test``: one worker per core) each worker computes on one
# thread: two workers of several OpenMP threads each on two cores spin-wait on each other
# and tiny models train 5-10x slower. No test depends on the thread count.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (or ``$CTXSENT_SHARED_DATA``); skips the test when it is absent."""
    path = Path(os.environ.get("CTXSENT_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path}")
    return path


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A saved 2-layer, width-32 random BERT with MiniLM's tokenizer."""
    from synthetic import make_tiny_bert

    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(autouse=True, scope="session")
def click_command_built_once_per_app():
    """typer's ``CliRunner.invoke`` builds the app's click command on every call: for
    ``ctxsent``'s app, reading each command's signature, ~0.1 s of CPU. Tests invoke apps
    hundreds of times; each app is built once here. Registering a command on an app after
    its first invocation would go unseen, and no test does."""
    import weakref

    import typer.testing

    build = typer.testing._get_command
    built: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def command(app):
        if app not in built:
            built[app] = build(app)
        return built[app]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", command)
        yield


@pytest.fixture(autouse=True)
def seeded_torch(request) -> None:
    """Seed torch per test, as pytest-randomly seeds ``random`` and numpy.

    The seed comes from ``random``, which pytest-randomly has just reseeded from the run's
    ``--randomly-seed`` and the test's id, so a test's random tensors depend on neither the
    order nor the other tests; runs with other seeds show a test that only passes by luck.
    Without the plugin (``-p no:randomly``) every test starts from seed 0.
    """
    import torch

    randomly = request.config.pluginmanager.hasplugin("randomly")
    torch.manual_seed(random.getrandbits(63) if randomly else 0)


def pytest_terminal_summary(terminalreporter, config) -> None:
    """Print the run's seed even under ``-q``, so a failure can be replayed exactly."""
    if config.pluginmanager.hasplugin("randomly"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(
            f"test order and seeds: rerun with -p randomly --randomly-seed={seed}"
        )
