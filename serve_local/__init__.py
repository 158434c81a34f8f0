"""OpenAI-shaped chat completions server: scripted provider and local model backends."""

__all__ = ["__version__"]

__version__ = "0.1.0"
