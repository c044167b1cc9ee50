"""`/o/<organizationId>/mcp`: the official MCP SDK's streamable HTTP transport inside the WSGI
edge, every tool call on the same path as an API call.

How a request goes, all of it on the Falcon worker thread that took the request:
1. It is admitted as the API admits a procedure call (`ProcedureResource.admit`: the bearer
   token of this organization, one request from the organization's bucket, whose
   RateLimit-* headers go on the answer; 401 and 429 are the API's own answers).
2. It is handed, as an ASGI request, to the SDK's `StreamableHTTPSessionManager`
   (stateless, JSON answers: no session outlives a request, so any edge replica answers any
   request), run on the worker thread's own event loop (`McpHost`: one loop and session
   manager per worker thread, made at its first MCP request and run only while it serves
   one). No thread hop: the loop's tasks start from the request's context (request id,
   trace span).
3. The SDK parses the JSON-RPC message and calls the lowlevel `Server`'s handlers. A
   `tools/call` runs `ProcedureResource.dispatch` (JSON Schema validation, the handler, its
   gRPC call) right there, blocking the thread's loop as the thread itself would block: that
   loop serves this request only. An error answer becomes a tool result with `isError` and
   the API's error body.
4. The SDK's answer (status, headers, JSON body) is the Falcon answer, with the headers of
   step 1.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import falcon
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from edge.body import _parse_float, _reject_constant
from edge.errors import INTERNAL_ERROR, ApiError
from edge.mcp import tools
from edge.resources import ProcedureResource
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.tracing import tracing_wanted

log = get_logger(__name__)

# Where a request's procedure call travels in its ASGI scope, from the resource to the tools.
SCOPE_KEY = "storypost.mcp"
# Answer headers of the SDK that the edge sets itself (Falcon computes the length).
_OWN_HEADERS = frozenset({"content-length", "date", "server"})

# A tool call of one request: the procedure's name and arguments in, its answer out (or the
# ApiError of an error answer).
Dispatch = Callable[[str, Mapping[str, Any]], Any]


@dataclass
class HttpAnswer:
    status: int = 500
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)


class _ThreadLoop:
    """One worker thread's event loop with its running session manager."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.loop = asyncio.new_event_loop()
        self.manager = manager
        self._stop = asyncio.Event()
        self._keeper: asyncio.Task[None] | None = None
        self.loop.run_until_complete(self._start())

    async def _start(self) -> None:
        started = asyncio.Event()

        async def keep() -> None:
            # The manager's task group lives as long as this task; it runs whenever the
            # loop runs a request.
            async with self.manager.run():
                started.set()
                await self._stop.wait()

        self._keeper = asyncio.ensure_future(keep())
        await started.wait()

    def run(self, serve: Callable[[StreamableHTTPSessionManager], Any]) -> Any:
        return self.loop.run_until_complete(serve(self.manager))

    def close(self) -> None:
        self._stop.set()
        if self._keeper is not None:
            self.loop.run_until_complete(self._keeper)
        self.loop.close()


class McpHost:
    """The SDK's streamable HTTP session manager, one per worker thread on that thread's own
    event loop, all over one lowlevel `Server`."""

    def __init__(self, server: Server[Any], max_body_bytes: int) -> None:
        self._server = server
        self._max_body_bytes = max_body_bytes
        self._local = threading.local()
        self._lock = threading.Lock()
        self._loops: list[_ThreadLoop] = []

    def _manager(self) -> StreamableHTTPSessionManager:
        return StreamableHTTPSessionManager(
            app=self._server,
            # No session state: any replica answers any request, nothing to expire.
            stateless=True,
            # One JSON answer a request: no procedure streams (progress is polled).
            json_response=True,
            # As the API takes: upload-temp-blob carries up to 30 MB of base64.
            max_request_body_size=self._max_body_bytes,
            # No DNS rebinding protection: a bearer token, never an ambient credential,
            # authorizes a request (a browser page cannot borrow it).
            security_settings=None,
        )

    def _thread_loop(self) -> _ThreadLoop:
        loop: _ThreadLoop | None = getattr(self._local, "loop", None)
        if loop is None:
            loop = self._local.loop = _ThreadLoop(self._manager())
            with self._lock:
                self._loops.append(loop)
        return loop

    def close(self) -> None:
        """Stops every thread's loop (tests; the threads must be idle)."""
        with self._lock:
            loops, self._loops = self._loops, []
        for loop in loops:
            loop.close()

    def answer(self, scope: dict[str, Any], body: bytes, dispatch: Dispatch) -> HttpAnswer:
        """The SDK's answer to one request, on this thread's loop."""
        answer = HttpAnswer()
        scope[SCOPE_KEY] = dispatch
        self._thread_loop().run(lambda manager: _serve(manager, scope, body, answer))
        return answer


async def _serve(
    manager: StreamableHTTPSessionManager, scope: dict[str, Any], body: bytes, answer: HttpAnswer
) -> None:
    sent = asyncio.Event()
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await sent.wait()  # asked again only to notice a disconnect
        return {"type": "http.disconnect"}

    async def send(message: Mapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer.status = message["status"]
            answer.headers = [
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in message.get("headers", ())
            ]
        elif message["type"] == "http.response.body":
            answer.body += message.get("body", b"")
            if not message.get("more_body"):
                sent.set()

    await manager.handle_request(scope, receive, send)


def asgi_scope(req: falcon.Request, organization_id: str) -> dict[str, Any]:
    """The ASGI `http` scope of a Falcon request."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": req.method,
        "scheme": req.scheme,
        "path": req.path,
        "raw_path": req.path.encode(),
        "root_path": "",
        "query_string": req.query_string.encode("latin-1"),
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in req.headers.items()
        ],
        "client": (req.remote_addr or "", 0),
        "server": (req.host, req.port),
        "state": {"organization_id": organization_id},
    }


def as_api_reads(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Tool arguments as the API reads a request body (edge.body): a whole number written as a
    float (`2.0`) is the integer, NaN and Infinity are not JSON."""
    try:
        text = json.dumps(arguments)
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float)
    except (ValueError, RecursionError):
        raise ApiError(400, "request body is not valid JSON") from None
    return cast(dict[str, Any], value)


def _dispatch(ctx: ServerRequestContext[Any, Any]) -> Dispatch:
    request = ctx.request
    dispatch = request.scope.get(SCOPE_KEY) if request is not None else None
    if not callable(dispatch):
        raise RuntimeError("an MCP request without the edge's procedure call")
    return cast(Dispatch, dispatch)


def build_server(catalog_json: Mapping[str, Any], *, traced: bool = True) -> Server[Any]:
    """The lowlevel MCP server: a tool per procedure of `catalog_json`, which is a resource.
    Untraced, without the SDK's span per message (a tenth of the MCP path's CPU)."""
    listed = types.ListToolsResult(tools=tools.tools_of(catalog_json))
    resources = types.ListResourcesResult(resources=[tools.catalog_resource()])
    contents = tools.catalog_contents(catalog_json)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            # Blocks this request's own loop, on its worker thread (the module doc).
            body = _dispatch(ctx)(params.name, params.arguments or {})
        except ApiError as error:
            return tools.failure(error.status, error.body)
        except Exception:
            # As the API's 500: the traceback goes to the log only, with the request id.
            log.exception("unhandled error in an MCP tool call", tool=params.name)
            return tools.failure(500, {"errorMessage": INTERNAL_ERROR})
        return tools.success(body)

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return resources

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != tools.CATALOG_URI:
            raise tools.unknown_resource(str(params.uri))
        return contents

    server: Server[Any] = Server(
        tools.SERVER_NAME,
        version=importlib.metadata.version("storypost"),
        title="storypost",
        instructions=tools.INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    if not traced:
        server.middleware.clear()
    return server


@component
class McpResource:
    """`/o/{organization_id}/mcp`: POST only. Stateless, the endpoint has no stream for a GET
    to open and no session for a DELETE to end: both get 405 with `Allow: POST`, as the
    transport's spec asks (the SDK's stateless transport would hold a GET open for good)."""

    api: ProcedureResource
    host: McpHost

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        self._answer(req, resp, organization_id)

    def _answer(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        # The access log's and the metrics' label: `mcp`, or `mcp:<procedure>` for a tool
        # call (a bounded set: the catalog's names).
        req.context.procedure = "mcp"
        caller = self.api.admit(req, resp, organization_id)
        ctx = self.api.call_context(req, organization_id, caller)
        body = self._body(req)

        def call(name: str, arguments: Mapping[str, Any]) -> Any:
            # The API's path after admission.
            proc = self.api.procedure(name)
            req.context.procedure = f"mcp:{proc.name}"
            return self.api.dispatch(proc, ctx, as_api_reads(arguments))

        answer = self.host.answer(asgi_scope(req, organization_id), body, call)
        resp.status = answer.status
        for name, value in answer.headers:
            if name.lower() not in _OWN_HEADERS:
                resp.set_header(name, value)
        resp.data = bytes(answer.body)

    def _body(self, req: falcon.Request) -> bytes:
        limit = self.api.settings.max_body_bytes
        length = req.content_length
        if length is not None and length > limit:
            raise ApiError(413, f"request body too large: at most {limit} bytes")
        raw = req.bounded_stream.read(limit + 1)
        if len(raw) > limit:
            raise ApiError(413, f"request body too large: at most {limit} bytes")
        return raw


def mcp_resource(api: ProcedureResource, catalog_json: Mapping[str, Any]) -> McpResource:
    """The MCP route's resource over the API's procedure resource (one `McpHost` each)."""
    server = build_server(catalog_json, traced=tracing_wanted(os.environ))
    return McpResource(api, McpHost(server, api.settings.max_body_bytes))
