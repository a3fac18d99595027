"""mkdocs hook: the pages generated from the code and the repository's own texts at build time, so none can drift.

- `<!-- cli-reference -->` becomes every command of the Typer app: usage, help and a table of its options.
- `<!-- flow-parameters -->` becomes every flow parameter model's fields (pydantic): name, type, default, description.
- `<!-- readme: HEADING -->` becomes the README's `## HEADING` section, as the tests run it.
- index.md, lab/notes.md and benchmarks/notes.md are README.md, capsel_lab/README.md and benchmarks/README.md;
  benchmarks/notes/NAME.md and lab/notes/NAME.md are benchmarks/notes/NAME.md and capsel_lab/notes/NAME.md.
"""

from __future__ import annotations

import json
import posixpath
import re
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

ROOT = Path(__file__).resolve().parents[1]
# pages that are the repository's READMEs, each kept where the code it describes lives
INCLUDED = {"index.md": "README.md", "lab/notes.md": "capsel_lab/README.md",
            "benchmarks/notes.md": "benchmarks/README.md"}
# and the notes split from them by topic, each a page of its own: the folder of pages and the repository folder
INCLUDED_FOLDERS = {"benchmarks/notes": "benchmarks/notes", "lab/notes": "capsel_lab/notes"}
MARKER = re.compile(r"<!-- (cli-reference|flow-parameters|readme: (?P<heading>[^>]+?)) -->")
LINK = re.compile(r"(!?)\[([^\]]*)\]\((?!https?:|#)([^)\s]+)\)")
# every character Markdown or HTML could read as syntax, written as a character reference
_LITERAL = str.maketrans({char: f"&#{ord(char)};" for char in "\\`*_[]|<>&#~!"})


def escape(text: str) -> str:
    """`text` shown as typed: neither Markdown nor HTML interprets any of it (one line, for a table cell)."""
    return " ".join(text.split()).translate(_LITERAL)


def code(text: str) -> str:
    """`text` as a code span when one can hold it (no backtick, no pipe in a table cell), else escaped."""
    text = " ".join(text.split())
    return f"`{text}`" if text and "`" not in text and "|" not in text else escape(text)


def relinked(text: str, source: str, page: str) -> str:
    """`text` of the repository file `source` with its relative links pointing from docs page `page`: a link to a
    file the site includes leads to its page, a link to any other file outside docs/ becomes its text and a code
    span."""
    pages = {included: "docs/" + name for name, included in included_pages().items()}

    def link(match: re.Match[str]) -> str:
        path, hash_sign, fragment = match.group(3).partition("#")
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        target = pages.get(target, target)
        if not target.startswith("docs/"):
            return f"{match.group(2)} (`{target}`)"
        relative = posixpath.relpath(target[len("docs/"):], posixpath.dirname(page) or ".")
        return f"{match.group(1)}[{match.group(2)}]({relative}{hash_sign}{fragment})"

    return LINK.sub(link, text)


def included_pages() -> dict[str, str]:
    """Each page that is a repository file, and that file (relative to the repository root)."""
    pages = dict(INCLUDED)
    for folder, source in INCLUDED_FOLDERS.items():
        pages.update({f"{folder}/{path.name}": f"{source}/{path.name}"
                      for path in sorted((ROOT / source).glob("*.md"))})
    return pages


def readme_section(heading: str, page: str) -> str:
    """The README's `## heading` section, up to the next `## ` heading."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index(f"\n## {heading}\n") + 1
    end = readme.find("\n## ", start)
    return relinked(readme[start:end if end >= 0 else None], "README.md", page)


def on_files(files: Any, config: Any) -> Any:
    """Add the pages that are repository READMEs."""
    from mkdocs.structure.files import File

    for page, source in included_pages().items():
        text = relinked((ROOT / source).read_text(encoding="utf-8"), source, page)
        files.append(File.generated(config, page, content=f"<!-- generated from {source} -->\n{text}"))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each marker with what it stands for."""
    def generated(match: re.Match[str]) -> str:
        if match.group(1) == "cli-reference":
            return cli_reference()
        if match.group(1) == "flow-parameters":
            return flow_parameters()
        return readme_section(match.group("heading"), page.file.src_uri)

    return MARKER.sub(generated, markdown)


def cli_reference() -> str:
    """Every command and group subcommand of `capsel`, in `capsel --help` order."""
    import typer.main

    from capsel.cli.main import SUMMARIES, build_app

    app = typer.main.get_command(build_app())
    root = app.context_class(app, info_name="capsel")
    names = dict.fromkeys([*SUMMARIES, *app.list_commands(root)])  # a command missing from the index still shows
    return "\n".join(_command(app.get_command(root, name), f"capsel {name}", root, 2) for name in names)


def _command(command: Any, path: str, parent: Any, level: int) -> str:
    """One command's section (a group's: its own, then each subcommand's)."""
    from rich.markup import render

    ctx = command.context_class(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
    help_text = render((command.help or "").split("\f")[0]).plain  # as the terminal shows it
    paragraphs = "\n\n".join(escape(paragraph) for paragraph in help_text.split("\n\n") if paragraph.strip())
    section = [f"{'#' * level} {path}\n", f"```text\n{ctx.get_usage()}\n```\n", paragraphs + "\n",
               _options(command, ctx)]
    if hasattr(command, "list_commands"):
        section += [_command(command.get_command(ctx, name), f"{path} {name}", ctx, level + 1)
                    for name in command.list_commands(ctx)]
    return "\n".join(section)


def _options(command: Any, ctx: Any) -> str:
    """The table of a command's arguments and options: flags, metavar, default, help."""
    from rich.markup import render

    rows = ["| option | value | default | help |", "|---|---|---|---|"]
    for param in command.get_params(ctx):
        flags = " / ".join([*param.opts, *param.secondary_opts]) if param.param_type_name == "option" \
            else (param.metavar or param.name.upper())
        value = "" if param.param_type_name == "argument" else (param.metavar or "")
        help_text = render(getattr(param, "help", None) or "").plain + (" (required)" if param.required else "")
        cells = [code(flags), escape(value), code(_cli_default(param)), escape(help_text)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def _cli_default(param: Any) -> str:
    """An option's default as typed on the command line; empty when it has none."""
    default = param.default
    if callable(default) or default is None or default == () or default == []:
        return ""
    if getattr(param, "is_flag", False) and isinstance(default, bool):
        if param.secondary_opts:
            return (param.opts if default else param.secondary_opts)[0]
        return "on" if default else ""
    values = default if isinstance(default, list | tuple) else [default]
    return ", ".join(str(getattr(value, "value", value)) for value in values)


def flow_parameters() -> str:
    """Each parameter model the flows take, from the flows' own configs down to every scorer spec."""
    from pydantic import BaseModel

    from capsel.evaluation.flow_config import EvaluateFlowConfig
    from capsel.pipeline_config import PipelineConfig, ScoreFlowConfig

    queue: list[type[BaseModel]] = [PipelineConfig, ScoreFlowConfig, EvaluateFlowConfig]
    done: list[type[BaseModel]] = []
    while queue:
        model = queue.pop(0)
        if model not in done:
            done.append(model)
            queue += [found for field in model.model_fields.values() for found in _models(field.annotation)]
    return "\n".join(_model_section(model) for model in done)


def _models(annotation: Any) -> list[Any]:
    """The pydantic models an annotation names, unions and lists opened."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models(arg)]


def _model_section(model: Any) -> str:
    """A model's heading, docstring and a table of its fields."""
    rows = ["| field | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        bounds = [f"{symbol} {getattr(rule, attr)}" for rule in field.metadata for attr, symbol in
                  (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤"), ("min_length", "at least"))
                  if getattr(rule, attr, None) is not None]
        kind = _type(field.annotation) + (" (" + escape(", ".join(bounds)) + ")" if bounds else "")
        rows.append(f"| {code(name)} | {kind} | {_default(field)} | {escape(field.description or '')} |")
    doc = escape((model.__doc__ or "").split("\n\n")[0])
    return f"## {model.__name__} {{#{model.__name__.lower()}}}\n\n{doc}\n\n" + "\n".join(rows) + "\n"


def _type(annotation: Any) -> str:
    """A field's type, each model in it linked to its section."""
    from pydantic import BaseModel

    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type(args[0])
    if origin in (Union, types.UnionType):
        return " &#124; ".join(_type(arg) for arg in args)
    if origin is Literal:
        return " &#124; ".join(escape(json.dumps(arg)) for arg in args)
    if origin is not None:
        return f"{escape(origin.__name__)}&#91;{', '.join(_type(arg) for arg in args)}&#93;"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    return escape("None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation)))


def _default(field: Any) -> str:
    """A field's default as JSON, as a run's parameters would give it (a table cell)."""
    from pydantic import BaseModel

    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    if isinstance(value, BaseModel):
        return "its fields' defaults"
    return code(json.dumps(getattr(value, "value", value)))
