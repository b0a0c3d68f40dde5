"""First-party plugin: the demo and the commands that build explanations and reports from data files."""

import xai_core
from xai_demo.commands import xai_register_cli_commands  # noqa: F401 - the hook pluggy finds

# pandas and the datasets are imported when the demo first runs, not when the plugin loads.
__getattr__, __dir__, __all__ = xai_core.lazy_exports(
    __name__,
    {"build": ["build_report", "load_data"], "demo": ["DemoSettings", "run_demo"]},
    eager=["xai_register_cli_commands"],
)
