"""First-party plugin: the demo and the commands that build explanations and reports from data files."""

import lazy_loader

from xai_demo.commands import xai_register_cli_commands

# pandas and the datasets are imported when the demo first runs, not when the plugin loads.
__getattr__, _, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={"build": ["build_report", "load_data"], "demo": ["DemoSettings", "run_demo"]},
)
__all__ += ["xai_register_cli_commands"]


def __dir__() -> list[str]:
    # The hooks must be listed: pluggy finds them through dir().
    return sorted({*globals(), *__all__})
