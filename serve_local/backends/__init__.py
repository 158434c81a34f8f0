"""Backends behind the endpoint: one plug point, :class:`~serve_local.backends.base.Backend`."""
