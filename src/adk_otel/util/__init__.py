"""Helpers with no knowledge of ADK or OpenTelemetry: text made safe to write
(sanitize.py), credentials kept out of messages (redact.py) and the way through
other libraries' wrappers (wrappers.py)."""
