"""``xai demo`` prints the verdicts of its comparisons in the terminal, as its report opens with them."""

import re

import pytest

pytestmark = pytest.mark.slow


def test_the_demo_prints_the_verdicts(tmp_path, capsys):
    """The summary has the IG and SHAP backend verdicts, one line per backend, and the methods' verdict."""
    from xai_demo.demo import run_demo

    assert run_demo(output=str(tmp_path / "report.html"), quick=True, progress=False) == 0
    out = capsys.readouterr().out
    summary = out[out.index("Does the explanation survive the hardware?") :]
    for method in ("ig", "shap"):
        assert re.search(
            rf"^{method}: .+ (within|beyond) .+\. (No prediction flips|Predictions flip on .+)\.$",
            summary,
            re.M,
        )
    for backend, number_format in (("gpu", "fp32"), ("tpu", "bf16"), ("edgetpu", "int8")):
        assert len(re.findall(rf"^  {backend} \({number_format}\): ", summary, re.M)) == 2
    assert re.search(r"^ig, shap and lime (agree|disagree) on cpu|^On cpu, ", summary, re.M)
