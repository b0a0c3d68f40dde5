"""`xai demo`: the main job writes a complete offline report."""

import re

import pytest

pytestmark = pytest.mark.slow

SECTIONS = (
    "The training sample",
    "Accuracy and simulated cost per backend",
    "Integrated gradients across backends",
    "SHAP across backends",
    "IG, SHAP and LIME on the same images",
    "Faithfulness of ig",
    "Methods on breast cancer",
    "What-if: edit a breast-cancer row",
    "Nearest counterfactual",
    "Partial dependence",
    "hidden layer",
    "Provenance",
)


def test_demo_report_has_every_section(demo_report):
    """Every part of the demo is in the report, with heatmaps and no external resources."""
    page = demo_report.read_text()
    for title in SECTIONS:
        assert title in page, title
    assert page.count('class="xai-heatmap"') > 10
    assert not re.search(r"""(src|href)=["']?https?:""", page)
    # breast cancer by feature name and in original units, rows headed by what they are
    assert "mean radius" in page and re.search(r"Row 0[^<]*: true (benign|malignant)", page)
    assert re.search(r"Row 0[^<]*: true \d · predicted \d \(\d\.\d\d\)", page)  # the digits too
    assert re.search(r"Partial dependence of <strong>[^<]+</strong> on mean radius", page)
    # the what-if session's offline editor: the MLP runs in the page on rows in their own units
    assert page.count('class="xai-whatif-offline-data"') == 1
    assert re.search(r'data-feature="0" value="\d+\.\d{1,3}"', page)  # mean radius, in mm


def test_demo_cli_rejects_unknown_dataset(capsys):
    """An unknown dataset name lists the known ones."""
    from xai_core.cli.main import main

    with pytest.raises(SystemExit):
        main(["demo", "--dataset", "cifar"])
    assert "fashion-mnist" in capsys.readouterr().err
