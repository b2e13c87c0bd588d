"""The only readers of ADK objects: span attributes (attributes.py), where a
model client sends its requests (endpoint.py), opt-in content (content.py),
what kind of failure (failures.py) and who ran an invocation (user_id.py)."""
