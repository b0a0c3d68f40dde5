"""First-party plugin: the demo and the commands that build explanations and reports from data files."""

from xai_demo.build import build_report, load_data
from xai_demo.commands import xai_register_cli_commands
from xai_demo.demo import DemoSettings, run_demo

__all__ = ["DemoSettings", "build_report", "load_data", "run_demo", "xai_register_cli_commands"]
