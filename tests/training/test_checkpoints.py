import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from ctxsent.training.engine import newest_checkpoint


class _CrashesAtStep5(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        if self.global_step == 5:
            raise RuntimeError("interrupted")
        return self.layer(batch).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


@pytest.mark.parametrize(
    ("examples", "when"),
    [
        (40, {"every_n_train_steps": 2}),  # pre-training: Cross-Thought, encoders, SSP
        (4, {"every_n_epochs": 1, "save_on_train_epoch_end": True}),  # 2-step epochs
    ],
)
def test_a_run_killed_mid_way_leaves_its_newest_checkpoint(tmp_path, examples, when):
    trainer = L.Trainer(
        max_steps=10, callbacks=[newest_checkpoint(tmp_path / "checkpoints", **when)],
        logger=False, enable_progress_bar=False, enable_model_summary=False,
        accelerator="cpu", default_root_dir=tmp_path,
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="interrupted"):
        trainer.fit(_CrashesAtStep5(), DataLoader(torch.randn(examples, 2), batch_size=2))
    folder = tmp_path / "checkpoints"
    assert sorted(p.name for p in folder.iterdir()) == ["last.ckpt"]  # one checkpoint
    assert torch.load(folder / "last.ckpt", weights_only=False)["global_step"] == 4
