"""adk-otel beside other software: remote A2A agents (a2a.py), W3C trace
context across processes (propagation.py), ADK's dev UI (devui.py) and other
instrumentations in the same process (coexistence.py)."""
