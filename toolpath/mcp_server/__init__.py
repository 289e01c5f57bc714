"""toolpath as an MCP server (``toolpath mcp``): a coding assistant reads the store — sessions, trajectories,
scores — and, when allowed, adds sessions to eval sets. :mod:`.store_tools` holds the tools, :mod:`.serving` the
server and its HTTP guard; the CLI starts it."""
