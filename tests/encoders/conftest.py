import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)
    torch.manual_seed(0)
