"""The package version and the google-adk range it supports, declared once."""

__version__ = "0.1.0"

SUPPORTED_ADK = ">=2.5"
"""2.5 is the first google-adk with ``on_agent_error_callback`` and
``on_run_error_callback``; tested against 2.5 and the newest release."""
