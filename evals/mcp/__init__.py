"""The MCP environment, whole: tools from MCP servers a task names (``environment``), its
fields (``fields``) and what its records keep (``data``), a task set carried over onto another
server's tools (``surfaces``: ``loopbench surface``), and the generated git history questions
asked through mcp-server-git (``git``: ``loopbench generate --source git``)."""
