"""``xai demo``: the main job. Until the report lands it prints what is available and what it will do."""

from __future__ import annotations

import xai_core as xai

PLAN = """\
xai demo will train a small network on the bundled MNIST sample, explain its predictions
with SHAP, LIME and integrated gradients on the cpu, gpu, tpu and edgetpu backends, and write
one self-contained HTML report comparing them. That report is not built yet; this run only
checks that the framework and its plugins load."""


def run_demo(output: str = "xai-demo-report.html", progress: bool = True) -> int:
    """Print the plan and what is installed; write nothing. Returns the exit status."""
    print(PLAN)
    print()
    print(f"xai-core {xai.__version__}")
    print(f"explainers: {', '.join(xai.list_explainers()) or '(none registered)'}")
    print(f"backends:   {', '.join(xai.list_backends())}")
    broken = xai.get_registry().broken
    for b in broken:
        print(f"broken plugin {b.name}: {b.error}")
    print(f"\nNo report was written (it would go to {output}).")
    return 1 if broken else 0
