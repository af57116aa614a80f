"""Tool specs from Python: a function's signature or a pydantic model becomes a `ToolSpec` (pure).

A function's parameters become a pydantic model (``<name>_arguments``, unknown keys
forbidden), its docstring's summary the description and its ``Args:`` / ``Parameters`` /
``:param:`` entries the parameters' descriptions. The model's JSON Schema is then made
portable, one schema every route accepts as it is:

- ``title`` keys are dropped (pydantic's noise, billed as input on every call);
- ``$defs`` are inlined wherever a ``$ref`` points (LiteLLM's chat-to-Anthropic translation
  and some upstreams do not resolve references); a recursive model keeps its ``$defs``;
- every object gets ``additionalProperties: false`` (the arguments model forbids unknown
  keys, so the schema says so);
- the root is ``{"type": "object", ...}``: Anthropic's ``input_schema`` requires it and
  OpenAI's ``parameters`` describe an object.

`strict_schema` narrows a portable schema to one provider's strict subset (OpenAI's
Structured Outputs, Anthropic's structured outputs): every property required (optional
ones made nullable), unsupported keywords moved into the description as the official SDKs
do, ``oneOf`` read as ``anyOf``. `strict_problem` says why a tool's schema cannot be sent
strict as it is (a `Toolbox` marks the specs that can: ``ToolSpec.strict``).
"""

from __future__ import annotations

import copy
import inspect
import re
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol, TypeAlias, get_type_hints, runtime_checkable

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticInvalidForJsonSchema,
    PydanticSchemaGenerationError,
    TypeAdapter,
    create_model,
)

__all__ = [
    "ANTHROPIC_STRICT_KEYWORDS",
    "OPENAI_STRICT_KEYWORDS",
    "TOOL_NAME_PATTERN",
    "Dialect",
    "HasToolSpecs",
    "ToolLike",
    "ToolSpec",
    "ToolsLike",
    "arguments_model",
    "as_tool_specs",
    "parse_docstring",
    "portable_schema",
    "spec_from_function",
    "spec_from_model",
    "strict_problem",
    "strict_schema",
]

Dialect = Literal["openai", "anthropic"]
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"

_NAME = re.compile(TOOL_NAME_PATTERN)
_STRUCTURE = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "anyOf", "enum"}
)
_ANNOTATION = frozenset({"description", "const", "$defs", "$ref", "default"})
#: OpenAI Structured Outputs: "Supported properties" of its strict-mode guide.
OPENAI_STRICT_KEYWORDS = (
    _STRUCTURE
    | _ANNOTATION
    | {
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    }
)
#: Anthropic structured outputs: the JSON Schema its grammar compiles ("JSON Schema
#: limitations"): no numeric, string-length or array-size bounds except ``minItems`` 0 or 1.
ANTHROPIC_STRICT_KEYWORDS = _STRUCTURE | _ANNOTATION | {"pattern", "format", "minItems"}
_OPENAI_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_ANTHROPIC_FORMATS = _OPENAI_FORMATS | {"uri"}
# How a dropped bound reads in the description, as the official SDKs word it.
_BOUND_WORDS = {
    "minimum": "Must be at least {}",
    "maximum": "Must be at most {}",
    "exclusiveMinimum": "Must be greater than {}",
    "exclusiveMaximum": "Must be less than {}",
    "multipleOf": "Must be a multiple of {}",
    "minLength": "Must be at least {} characters long",
    "maxLength": "Must be at most {} characters long",
    "minItems": "Must have at least {} items",
    "maxItems": "Must have at most {} items",
    "uniqueItems": "Items must be unique: {}",
    "pattern": "Must match the pattern {}",
    "format": "Must be in the format {}",
}

# --- docstrings ---------------------------------------------------------------------

_GOOGLE_HEAD = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_NUMPY_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(:.*)?$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_SECTION = re.compile(
    r"^(Returns?|Yields?|Raises?|Examples?|Notes?|See Also|References|Warnings?|Attributes)"
    r"\s*:?\s*$"
)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """A docstring's description and per-parameter descriptions (Google, NumPy, reST).

    The description is the text before the first section (``Args:``, ``Parameters``,
    ``:param``, ``Returns``...): each paragraph's lines joined by single spaces.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    params: dict[str, str] = {}
    summary: list[str] = []
    in_summary = True
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if line.startswith(":"):
            index, in_summary = _sphinx(lines, index, params), False
        elif _GOOGLE_HEAD.match(line):
            index, in_summary = _google(lines, index + 1, params), False
        elif _NUMPY_RULE.match(following) and line in ("Parameters", "Arguments", "Args"):
            index, in_summary = _numpy(lines, index + 2, params), False
        elif _SECTION.match(line) or (line and _NUMPY_RULE.match(following)):
            index, in_summary = _skip_section(lines, index + 1), False
        else:
            if in_summary:
                summary.append(line)
            index += 1
    paragraphs = "\n".join(summary).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip()), params


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google(lines: list[str], index: int, params: dict[str, str]) -> int:
    base: int | None = None
    name: str | None = None
    while index < len(lines) and lines[index].strip():
        line = lines[index]
        if base is None:
            base = _indent(line)
        elif _indent(line) < base:
            break  # the next section, with no blank line before it
        match = _GOOGLE_ITEM.match(line.strip())
        if _indent(line) == base and match:
            name = match.group(1).lstrip("*")
            params[name] = match.group(3).strip()
        elif name is not None:
            params[name] = f"{params[name]} {line.strip()}".strip()
        index += 1
    return index


def _numpy(lines: list[str], index: int, params: dict[str, str]) -> int:
    name: str | None = None
    while index < len(lines):
        line = lines[index]
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if not line.strip():
            index += 1
            continue
        if _NUMPY_RULE.match(following):
            break  # the next section's title
        match = _NUMPY_ITEM.match(line.strip())
        if _indent(line) == 0 and match:
            name = match.group(1).lstrip("*")
            params[name] = ""
        elif name is not None:
            params[name] = f"{params[name]} {line.strip()}".strip()
        index += 1
    return index


def _sphinx(lines: list[str], index: int, params: dict[str, str]) -> int:
    match = _SPHINX_PARAM.match(lines[index].strip())
    index += 1
    text = match.group(2).strip() if match else ""
    while index < len(lines) and lines[index].strip() and not lines[index].strip().startswith(":"):
        text = f"{text} {lines[index].strip()}".strip()
        index += 1
    if match:
        params[match.group(1)] = text
    return index


def _skip_section(lines: list[str], index: int) -> int:
    if index < len(lines) and _NUMPY_RULE.match(lines[index].strip()):
        index += 1
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        heading = (
            _SECTION.match(stripped)
            or _GOOGLE_HEAD.match(stripped)
            or stripped.startswith(":")
            or _NUMPY_RULE.match(following)
        )
        if stripped and _indent(line) == 0 and heading:
            break
        index += 1
    return index


# --- specs --------------------------------------------------------------------------


def _check_name(name: str, source: object, how: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"{source!r}: tool name {name!r} must match {TOOL_NAME_PATTERN}; {how}")
    return name


_NAME_FUNCTION = (
    "name it: ToolSpec.from_function(fn, name='read_file') for a spec, or, for a Toolbox "
    "(which names each tool after its function), define it with def read_file(...)"
)
_NAME_MODEL = "name it: ToolSpec.from_model(Model, name='plan')"


def _parameter_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The parameters' evaluated type hints; the return annotation is never evaluated (a
    tool returning a class local to a function would otherwise be unreadable)."""
    target = inspect.unwrap(fn)
    annotations = dict(getattr(target, "__annotations__", None) or {})
    annotations.pop("return", None)
    shim = types.SimpleNamespace(__annotations__=annotations)
    namespace = getattr(target, "__globals__", None)
    return get_type_hints(shim, globalns=namespace, include_extras=True)


def arguments_model(fn: Callable[..., Any], *, tool: str | None = None) -> type[BaseModel]:
    """A pydantic model of ``fn``'s parameters: each a field aliased by its own name.

    Fields are named ``p0``, ``p1``... and aliased to the parameters, so any parameter name
    works (``json``, ``model_config``, ``_private``...). Unknown keys are forbidden. A
    ``*args`` or ``**kwargs`` parameter is a `TypeError`: a tool's arguments are named.
    """
    try:
        signature = inspect.signature(fn)
        hints = _parameter_hints(fn)
    except (NameError, TypeError) as exc:
        raise TypeError(f"{fn!r}: cannot read the parameters' types: {exc}") from exc
    _, docs = parse_docstring(fn.__doc__)
    fields: dict[str, Any] = {}
    for position, (name, parameter) in enumerate(signature.parameters.items()):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{fn!r}: *{name} cannot be a tool parameter: name every argument")
        extra: dict[str, Any] = {"alias": name}
        if docs.get(name):
            extra["description"] = docs[name]
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[f"p{position}"] = (hints.get(name, Any), Field(default, **extra))
    title = f"{getattr(fn, '__name__', 'tool')}_arguments"
    try:
        model: type[BaseModel] = create_model(
            title, __config__=ConfigDict(extra="forbid"), **fields
        )
    except PydanticSchemaGenerationError:
        name = tool or str(getattr(fn, "__name__", fn))
        for label, (hint, _) in zip(signature.parameters, fields.values(), strict=True):
            try:
                TypeAdapter(hint)
            except PydanticSchemaGenerationError:
                raise TypeError(_unschemable(name, label, hint)) from None
        raise
    return model


def _unschemable(tool: str, parameter: str, hint: object) -> str:
    shown = getattr(hint, "__name__", None) or repr(hint)
    return (
        f"tool {tool!r}: parameter {parameter!r} ({shown}) has no JSON Schema, so a model "
        "cannot be told how to pass it: give it a JSON type (str, int, float, bool, a "
        "list or dict of them, an enum, a pydantic model), or take it out of the tool's "
        "signature (bind it inside a wrapper function the tool calls)"
    )


def _no_schema(fn: Callable[..., Any], tool: str, model: type[BaseModel]) -> TypeError:
    """The `TypeError` naming the first parameter whose type no JSON Schema describes."""
    parameters = list(inspect.signature(fn).parameters)
    for parameter, field in zip(parameters, model.model_fields.values(), strict=False):
        try:
            TypeAdapter(Any if field.annotation is None else field.annotation).json_schema()
        except PydanticInvalidForJsonSchema:
            return TypeError(_unschemable(tool, parameter, field.annotation))
    return TypeError(f"tool {tool!r}: its parameters have no JSON Schema")


def spec_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    repeatable: bool = False,
) -> ToolSpec:
    """`ToolSpec.from_function`: name, docstring summary and parameters of ``fn`` (which it
    only reads)."""
    summary, _ = parse_docstring(fn.__doc__)
    tool = _check_name(name or str(getattr(fn, "__name__", "")), fn, _NAME_FUNCTION)
    model = arguments_model(fn, tool=tool)
    try:
        schema = model.model_json_schema()
    except PydanticInvalidForJsonSchema:
        raise _no_schema(fn, tool, model) from None
    return ToolSpec(
        name=tool,
        description=summary if description is None else description,
        parameters=portable_schema(schema),
        repeatable=repeatable,
    )


def spec_from_model(
    model: type[BaseModel], *, name: str | None = None, description: str | None = None
) -> ToolSpec:
    """`ToolSpec.from_model`: a tool whose arguments are ``model``'s fields."""
    summary, _ = parse_docstring(model.__dict__.get("__doc__"))
    return ToolSpec(
        name=_check_name(name or model.__name__, model, _NAME_MODEL),
        description=summary if description is None else description,
        parameters=portable_schema(model.model_json_schema()),
    )


# --- schemas ------------------------------------------------------------------------

_SCHEMA_MAPS = ("properties", "$defs", "patternProperties", "dependentSchemas")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _walk(schema: Any, visit: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """``schema`` rebuilt bottom-up, ``visit`` applied to every subschema (data left alone)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _walk(sub, visit) for name, sub in value.items()}
        elif key in _SCHEMA_ONE:
            out[key] = _walk(value, visit)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_walk(sub, visit) for sub in value]
        else:
            out[key] = value
    return visit(out)


def _ref_name(ref: Any) -> str | None:
    prefix = "#/$defs/"
    return ref[len(prefix) :] if isinstance(ref, str) and ref.startswith(prefix) else None


def _inline(schema: Any, defs: Mapping[str, Any], stack: tuple[str, ...], kept: set[str]) -> Any:
    if not isinstance(schema, dict):
        return schema
    target = _ref_name(schema.get("$ref"))
    if target is not None and target in defs:
        if target in stack:
            kept.add(target)  # recursive: a reference is the only finite form
            return schema
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        inlined = _inline(defs[target], defs, (*stack, target), kept)
        return {**inlined, **siblings}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict) and key != "$defs":
            out[key] = {n: _inline(sub, defs, stack, kept) for n, sub in value.items()}
        elif key in _SCHEMA_ONE:
            out[key] = _inline(value, defs, stack, kept)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_inline(sub, defs, stack, kept) for sub in value]
        else:
            out[key] = value
    return out


def _tidy(node: dict[str, Any]) -> dict[str, Any]:
    node.pop("title", None)
    if "properties" in node and "additionalProperties" not in node:
        node["additionalProperties"] = False
    return node


def portable_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic JSON Schema made one every route accepts (see the module docstring)."""
    source = copy.deepcopy(dict(schema))
    defs: dict[str, Any] = source.pop("$defs", {})
    kept: set[str] = set()
    out: dict[str, Any] = _inline(source, defs, (), kept)
    # A recursive model's definitions stay, each inlined but for its own cycle.
    while kept - set(out.get("$defs", {})):
        for name in sorted(kept - set(out.get("$defs", {}))):
            out.setdefault("$defs", {})[name] = _inline(defs[name], defs, (name,), kept)
    out = _walk(out, _tidy)
    out.pop("description", None)  # the tool's own description says it
    if out.get("type") != "object":
        raise ValueError(f"a tool's parameters must be an object schema, not {out!r}"[:200])
    out.setdefault("properties", {})
    return out


def _accepts_null(node: Mapping[str, Any]) -> bool:
    if node.get("type") == "null" or (
        isinstance(node.get("type"), list) and "null" in node["type"]
    ):
        return True
    return any(_accepts_null(sub) for sub in node.get("anyOf", ()))


def _describe(node: dict[str, Any], notes: list[str]) -> None:
    if notes:
        text = ". ".join(notes) + "."
        node["description"] = f"{node['description']} ({text})" if node.get("description") else text


def strict_schema(schema: Mapping[str, Any], dialect: Dialect) -> dict[str, Any]:
    """``schema`` (portable) narrowed to ``dialect``'s strict structured-output subset.

    Every object lists all its properties as required and forbids others; a property that
    was optional accepts ``null`` instead. Keywords outside the dialect's subset
    (`OPENAI_STRICT_KEYWORDS`, `ANTHROPIC_STRICT_KEYWORDS`) and unsupported string formats
    are removed and stated in the description; ``oneOf`` becomes ``anyOf``, ``const`` a
    one-value ``enum``, ``default`` is dropped. A `ValueError` for what strict mode cannot
    express: an open object (``dict[str, X]``), or recursion for Anthropic.
    """
    allowed = OPENAI_STRICT_KEYWORDS if dialect == "openai" else ANTHROPIC_STRICT_KEYWORDS
    formats = _OPENAI_FORMATS if dialect == "openai" else _ANTHROPIC_FORMATS
    if dialect == "anthropic" and "$defs" in schema:
        raise ValueError("Anthropic's strict mode does not take recursive schemas")

    def visit(node: dict[str, Any]) -> dict[str, Any]:
        if "oneOf" in node:
            node["anyOf"] = node.pop("oneOf")
        if "const" in node:
            node["enum"] = [node.pop("const")]
        node.pop("default", None)
        notes: list[str] = []
        unsupported = set(node) - allowed
        for key in [k for k in _BOUND_WORDS if k in unsupported] + sorted(
            unsupported - set(_BOUND_WORDS)
        ):
            if key in _BOUND_WORDS:
                notes.append(_BOUND_WORDS[key].format(node[key]))
            elif key not in ("examples", "deprecated", "readOnly", "writeOnly", "$comment"):
                raise ValueError(f"strict mode ({dialect}) cannot express {key!r}")
            del node[key]
        if "format" in node and node["format"] not in formats:
            notes.append(_BOUND_WORDS["format"].format(node.pop("format")))
        if dialect == "anthropic" and node.get("minItems", 0) > 1:
            notes.append(_BOUND_WORDS["minItems"].format(node.pop("minItems")))
        _describe(node, notes)
        if node.get("type") == "object" or "properties" in node:
            extra = node.get("additionalProperties", False)
            if extra is not False or ("properties" not in node and node.get("type") == "object"):
                raise ValueError(
                    "strict mode needs objects with fixed properties, not an open mapping"
                )
            properties: dict[str, Any] = node["properties"]
            required = set(node.get("required", ()))
            for name, sub in properties.items():
                if name not in required and not _accepts_null(sub):
                    wrapper = {"anyOf": [sub, {"type": "null"}]}
                    if "description" in sub:
                        wrapper = {"description": sub.pop("description"), **wrapper}
                    properties[name] = wrapper
            node["required"] = list(properties)
            node["additionalProperties"] = False
        return node

    out: dict[str, Any] = _walk(copy.deepcopy(dict(schema)), visit)
    return out


def strict_problem(schema: Mapping[str, Any], dialect: Dialect = "openai") -> str | None:
    """Why ``schema`` cannot be a strict tool's parameters as it is (None: it can), in
    ``dialect``'s strict subset: an optional parameter (strict mode requires every property,
    so a model would send ``null`` where the function takes a default), a keyword strict
    mode drops, or what it cannot express at all. The schema is never narrowed: a tool is
    sent strict exactly as the toolbox validates it, or not strict."""
    try:
        narrowed = strict_schema(schema, dialect)
    except ValueError as exc:
        return str(exc)
    if narrowed == schema:
        return None
    optional = _optional_names(schema)
    if optional:
        return f"optional parameters ({', '.join(optional)}) would become required"
    return "strict mode would change its schema (a keyword it does not take)"


def _optional_names(schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = set(schema.get("required", ()))
    return [name for name in properties if name not in required]


class ToolSpec(BaseModel):
    """A tool the model may call: a name, a description and a JSON Schema for its arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: Annotated[str, Field(pattern=TOOL_NAME_PATTERN)]
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    #: Whether the tool may run again when a run was cut and its outcome is unknown (a
    #: read, a test run); never sent to the model (left out of every dump).
    repeatable: bool = Field(default=False, exclude=True)
    #: Whether the tool is sent with ``strict: true`` where the route and model take it (its
    #: schema fits strict mode as it is: `strict_problem`); set by `Toolbox`, never dumped.
    strict: bool = Field(default=False, exclude=True)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        repeatable: bool = False,
    ) -> ToolSpec:
        """A spec from a function (sync or async): its name, its docstring's summary, and a
        schema of its parameters from their type hints and the docstring's ``Args:``.

        ``repeatable`` is the spec's own (`repeatable`); ``fn`` is only read, never marked.
        A `Toolbox` learns which of its tools are repeatable from its ``repeatable=`` names.
        """
        return spec_from_function(fn, name=name, description=description, repeatable=repeatable)

    @classmethod
    def from_model(
        cls, model: type[BaseModel], *, name: str | None = None, description: str | None = None
    ) -> ToolSpec:
        """A spec whose arguments are ``model``'s fields (name and description default to the
        class's name and docstring)."""
        return spec_from_model(model, name=name, description=description)


#: One tool: a `ToolSpec`, a dict in one of the three common shapes, or a Python function
#: (its spec is `ToolSpec.from_function`'s).
ToolLike: TypeAlias = ToolSpec | Mapping[str, Any] | Callable[..., Any]


@runtime_checkable
class HasToolSpecs(Protocol):
    """Anything holding tool specs, such as a `Toolbox`: its ``specs`` are the tools."""

    @property
    def specs(self) -> Sequence[ToolSpec]: ...


#: The ``tools`` a request takes: tools one by one, a `Toolbox` (its specs), or none.
ToolsLike: TypeAlias = Iterable[ToolLike] | HasToolSpecs | None

_TOOL_SHAPES = (
    "a tool is a ToolSpec, a dict in one of the three tool shapes, or a function "
    "(ToolSpec.from_function)"
)


def as_tool_specs(tools: ToolsLike) -> list[ToolSpec]:
    """Tool specs from a `Toolbox` (its ``specs``), or from `ToolSpec`s, functions and plain
    dicts in any of the three common shapes.

    Accepted dicts: ``{name, description, parameters}``; OpenAI's
    ``{"type": "function", "function": {...}}``; Anthropic's ``{name, description,
    input_schema}``. A malformed dict is a `ValueError` from validation; anything else is
    a `TypeError` naming what was passed and what to pass.
    """
    if tools is None:
        return []
    # A list of specs, the usual case, skips the runtime-protocol check (about 7 us a call).
    if type(tools) is list and all(type(tool) is ToolSpec for tool in tools):
        return tools.copy()
    if isinstance(tools, HasToolSpecs) and not isinstance(tools, ToolSpec):
        return list(tools.specs)
    if isinstance(tools, ToolSpec | Mapping) or (callable(tools) and not isinstance(tools, type)):
        if isinstance(tools, ToolSpec):
            one = f"the ToolSpec {tools.name!r}"
        elif isinstance(tools, Mapping):
            one = "one tool as a dict"
        else:
            one = f"the function {getattr(tools, '__name__', repr(tools))}"
        raise TypeError(
            f"tools must be a list of tools or a Toolbox, got {one}: pass it in a list, "
            f"[...]; {_TOOL_SHAPES}"
        )
    if not isinstance(tools, Iterable):
        raise TypeError(
            f"tools must be a list of tools or a Toolbox, got {type(tools).__name__}; "
            f"{_TOOL_SHAPES}"
        )
    specs: list[ToolSpec] = []
    for index, tool in enumerate(tools):
        if isinstance(tool, ToolSpec):
            specs.append(tool)
        elif isinstance(tool, Mapping):
            data: Mapping[str, Any] = tool
            if data.get("type") == "function" and isinstance(data.get("function"), Mapping):
                data = data["function"]
            if "input_schema" in data:
                data = {
                    "name": data.get("name"),
                    "description": data.get("description", ""),
                    "parameters": data["input_schema"],
                }
            specs.append(ToolSpec.model_validate(dict(data)))
        elif isinstance(tool, HasToolSpecs):
            specs.extend(tool.specs)
        elif callable(tool) and not isinstance(tool, type):
            spec = ToolSpec.from_function(tool)
            if strict_problem(spec.parameters) is None:  # as a `Toolbox` holding it would
                spec = spec.model_copy(update={"strict": True})
            specs.append(spec)
        else:
            hint = (
                f"for a model's fields, pass ToolSpec.from_model({tool.__name__})"
                if isinstance(tool, type) and issubclass(tool, BaseModel)
                else _TOOL_SHAPES
            )
            raise TypeError(f"tools[{index}] is {tool!r}, not a tool: {hint}")
    return specs
