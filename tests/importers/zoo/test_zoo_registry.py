"""The zoo's registry, its stages' bookkeeping, and the error naming the extra."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import xai_core as xai
from xai_core.importers.zoo import SOURCES, ZooModel, catalogue, register
from xai_core.importers.zoo.__main__ import main
from xai_core.importers.zoo.checks import STAGES, check_model


def _tiny() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 3),
    ).eval()


class _Unsupported(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.det(x)  # Det: no converter


def test_catalogue_lists_every_torchvision_classifier_once():
    """catalogue('torchvision') is torchvision's own list of classification builders, each once."""
    import torchvision

    names = [e.name for e in catalogue("torchvision")]
    assert names == torchvision.models.list_models(module=torchvision.models)
    assert all(e.source == "torch" and e.input_shape[0] == 3 for e in catalogue("torchvision"))


def test_unknown_family_lists_the_known_ones_and_duplicates_are_refused():
    """An unknown family names the known ones; registering a key twice is refused."""
    with pytest.raises(xai.UnknownNameError, match="torchvision"):
        catalogue("nope")
    first = catalogue("timm")[0]
    with pytest.raises(xai.ValidationError, match="registered already"):
        register(first.family, first.name, "torch", first.build, first.input_shape)
    with pytest.raises(xai.ValidationError, match="source"):
        register("x", "y", "jax", _tiny, (3, 4, 4))


def test_every_stage_of_a_small_network_passes_with_its_time():
    """A small CNN passes all six stages; each has a time and a detail."""
    result = check_model(ZooModel("test", "tiny", "torch", _tiny, (3, 4, 4)), steps=2)
    assert [result.stages[s].status for s in STAGES] == ["pass"] * len(STAGES)
    assert all(result.stages[s].seconds > 0 and result.stages[s].detail for s in STAGES)
    assert result.passed


def test_a_refusal_and_a_failure_are_recorded_never_raised():
    """An unsupported operator is 'refused' (named); a build that raises is 'fail'; later stages skipped."""
    refused = check_model(ZooModel("test", "cumsum", "torch", _Unsupported, (3, 4, 4)))
    assert refused.status("import") == "refused" and "'Det'" in refused.stages["import"].detail
    assert {refused.status(s) for s in STAGES[1:]} == {"skipped"}

    def broken():
        raise RuntimeError("no weights\nsecond line")

    failed = check_model(ZooModel("test", "broken", "torch", broken, (3, 4, 4)), stages=["ig"])
    assert failed.stages["import"].detail == "RuntimeError: no weights"
    assert failed.status("import") == "fail" and not failed.passed
    with pytest.raises(xai.ValidationError, match="stages"):
        check_model(ZooModel("test", "tiny", "torch", _tiny, (3, 4, 4)), stages=["tpu2"])


def test_the_table_prints_a_row_per_model_and_a_summary(capsys):
    """python -m xai_core.importers.zoo prints the markdown table and the summary line."""
    assert main(["--family", "timm", "--model", "resnet10t", "--stages", "import", "forward"]) == 0
    out = capsys.readouterr().out
    assert "| model | import | forward |" in out
    assert "| timm/resnet10t | ok " in out
    assert "1/1 models pass every stage asked for" in out


@pytest.mark.parametrize("family", sorted(SOURCES))
def test_a_missing_library_names_the_extra(family):
    """Without the family's library, catalogue() says which extra installs it."""
    module = {"torchvision": "torchvision", "timm": "timm", "transformers": "transformers"}[family]
    script = (
        "import sys\n"
        f"sys.modules[{module!r}] = None\n"
        "from xai_core.errors import CapabilityError\n"
        "from xai_core.importers.zoo import catalogue\n"
        "try:\n"
        f"    catalogue({family!r})\n"
        "except CapabilityError as exc:\n"
        "    assert \"pip install 'xai-core[zoo]'\" in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=300)
