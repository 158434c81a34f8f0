"""The Model Context Protocol, both ways: tools from any MCP server offered to a run
(:mod:`harness.mcp.servers`), and this project's own file and SQL tools served to any MCP client
(:mod:`harness.mcp.serve`, ``python -m harness.mcp serve``)."""
