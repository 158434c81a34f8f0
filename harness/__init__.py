"""The agent loop, its controls, the tool catalogue and the provider client: the loop in
``harness.loop`` (``run_loop``) with its config in ``harness.config``, the settings and their
hooks in ``harness.policies``, the presets in ``harness.presets``, tools and the workspace in
``harness.tools`` and ``harness.workspace``, the provider clients in ``harness.client``. This
package imports none of them, so a module of a plugin that imports ``harness.policies.base``
loads without the loop."""
