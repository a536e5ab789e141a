"""Tools: the ``@tool`` decorator and the built-in sets (``calc``, ``files``, ...)."""

from tao.errors import ToolError
from tao.tools.base import Tool, make_tool, tool
from tao.tools.registry import TOOL_SETS, resolve_tools

__all__ = ["TOOL_SETS", "Tool", "ToolError", "make_tool", "resolve_tools", "tool"]
