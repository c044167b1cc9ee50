"""The MCP server of the edge: one tool per catalog procedure, the catalog as a resource,
over the official SDK's streamable HTTP transport at `/o/<organizationId>/mcp`."""

from edge.mcp.endpoint import McpResource, mcp_resource

__all__ = ["McpResource", "mcp_resource"]
