"""The configuration reference (docs/reference/configuration.md), generated from hudi-md's option
registry (``hudi_md.config.all_options()``) when the site is built.

A mkdocs hook (``hooks:`` in mkdocs.yml): the page's marker line is replaced by one section per
scope, each a table of the options in that scope. ``tests/test_docs.py`` renders the same text to
check that every registered key is in it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

PAGE = "reference/configuration.md"
MARKER = "<!-- hudi-md: configuration reference -->"

# (scope, heading, what the scope's options are for), in page order; a scope the registry has
# beyond these gets a section after them, headed by its name.
SCOPES = (
    ("write", "Write options", "Read by every write: `hudi_md.write`, Spark writes and SQL statements."),
    ("read", "Read options", 'Read by `open_table(...)`, `spark.read.format("hudi-md")` and the CLI.'),
    ("table", "Table properties", "Kept in `.hoodie/hoodie.properties` when a table is created."),
    ("storage", "Storage options", "How files are written and read: retries, layout, file sizes."),
    ("metastore", "Metastore options", "The metastore server's client (RFC-36)."),
    ("spark", "Spark settings", "Spark session settings (`spark.*`) and options only Spark reads."),
)


class ConfigReferenceError(RuntimeError):
    """The registry cannot be imported or read."""


def load_options() -> list[Any]:
    """``hudi_md.config.all_options()``; a clear error when the registry is not there."""
    try:
        from hudi_md.config import all_options
    except ImportError as e:
        raise ConfigReferenceError(
            "the configuration reference is generated from hudi-md's option registry, and "
            f"`from hudi_md.config import all_options` failed: {e}. Install hudi-md from this "
            "checkout (scripts/setup) with the hudi_md.config package in it."
        ) from e
    return list(all_options())


def render_reference(options: Iterable[Any]) -> str:
    """The reference as Markdown: for each scope a section, and in it one entry per option: the
    key (a heading, whose anchor is the key at its first entry), its type, hudi-md's default,
    Apache Hudi's default (or "hudi-md only"), and its description with its choices and the
    older names read too. An option with several scopes is listed in each."""
    options = sorted(options, key=lambda o: o.key)
    known = [scope for scope, _, _ in SCOPES]
    extra = sorted({s for o in options for s in o.scopes} - set(known))
    sections = [*SCOPES, *((s, f"{s.capitalize()} options", "") for s in extra)]
    anchored: set[str] = set()
    out = []
    for scope, heading, about in sections:
        out.append(f"## {heading} {{#{scope}}}\n")
        if about:
            out.append(about + "\n")
        in_scope = [o for o in options if scope in o.scopes]
        if not in_scope:
            out.append("No options.\n")
            continue
        for o in in_scope:
            anchor = f" {{#{o.key}}}" if o.key not in anchored else ""
            anchored.add(o.key)
            hudi = f"Apache Hudi's default {_value(o.hudi_default)}" if o.in_hudi else "hudi-md only"
            doc = " ".join(str(o.doc or "").split())
            if o.choices:
                doc += " One of: " + ", ".join(f"`{c}`" for c in o.choices) + "."
            # older names read too (the registry's `alternatives`, where it has them)
            older = tuple(getattr(o, "alternatives", ()) or ())
            if older:
                doc += " Also read as " + ", ".join(f"`{k}`" for k in older) + "."
            out.append(f"#### `{o.key}`{anchor}\n")
            # one paragraph: the facts, a line break (two spaces), the description
            out.append(f"*{_type_name(o.type)}* · default {_value(o.default)} · {hudi}  \n{doc}\n")
    return "\n".join(out)


def _type_name(t: Any) -> str:
    return str(getattr(t, "__name__", t))


def _value(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, bool):
        return f"`{str(v).lower()}`"
    if isinstance(v, (list, tuple)):
        v = ",".join(str(x) for x in v)
    text = str(v)
    return f"`{text}`" if text else '`""`'


# --- the mkdocs hook --------------------------------------------------------------------------------


def on_config(config: Any) -> Any:
    # fail before any page is built when the registry is missing
    from mkdocs.exceptions import PluginError

    try:
        load_options()
    except ConfigReferenceError as e:
        raise PluginError(str(e)) from e
    return config


def on_page_markdown(markdown: str, *, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    from mkdocs.exceptions import PluginError

    if MARKER not in markdown:
        raise PluginError(f"{PAGE} has lost its marker line {MARKER!r}")
    try:
        return markdown.replace(MARKER, render_reference(load_options()))
    except ConfigReferenceError as e:
        raise PluginError(str(e)) from e
