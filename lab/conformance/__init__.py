"""Conformance clients of the server: the OpenAI Agents SDK and Inspect AI."""
