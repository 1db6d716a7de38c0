"""Strict reading of configuration files: every key must be known.

A misspelt key (``targt = 7`` in ``[rules]``, ``langauge`` in a manifest) would otherwise be
ignored and a whole contest played under the defaults. :func:`convert_strict` checks a decoded
TOML document against the msgspec struct it configures, section by section, before converting
it, and raises :class:`arena.errors.UserError` naming the file, the section, the key and the
closest known key.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin

import msgspec

from arena.errors import UserError

T = TypeVar("T")


def read_toml(path: str | Path, missing: str, bad: str = "") -> dict[str, Any]:
    """The table of the TOML file ``path``. Raises :class:`UserError` naming the file: ``missing``
    if it does not exist; ``bad`` followed by the reason if it cannot be read, is not UTF-8, is
    not TOML, or nests arrays or tables too deep for the parser (``tomllib`` recurses)."""
    try:
        return tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: {missing}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"{path}: {bad}{exc}") from None
    except RecursionError:
        raise UserError(f"{path}: {bad}arrays or tables nested too deep") from None


def _struct_of(tp: Any) -> type[msgspec.Struct] | None:
    """The struct type inside ``tp`` (``S``, ``S | None``), or None."""
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return tp
    if get_origin(tp) is Union or type(tp).__name__ == "UnionType":
        for arg in get_args(tp):
            found = _struct_of(arg)
            if found is not None:
                return found
    return None


def unknown_keys(raw: Any, typ: type[msgspec.Struct], section: str = "") -> list[tuple[str, str, str | None]]:
    """Every key of ``raw`` (a dict, nested dicts for nested structs) that ``typ`` does not
    have, as ``(section, key, closest known key or None)``; ``section`` is dotted (``rules``,
    ``server``), empty at the top level."""
    if not isinstance(raw, dict):
        return []
    fields = {f.encode_name: f for f in msgspec.structs.fields(typ)}
    out = []
    for key, value in raw.items():
        f = fields.get(key)
        if f is None:
            close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.6)
            out.append((section, str(key), close[0] if close else None))
            continue
        inner = _struct_of(f.type)
        if inner is not None:
            out.extend(unknown_keys(value, inner, f"{section}.{key}" if section else key))
    return out


def describe_unknown(source: str, section: str, key: str, close: str | None, typ: type[msgspec.Struct]) -> str:
    """One line: the file, the key (and its section), and the closest known key."""
    where = f" in [{section}]" if section else ""
    hint = f"did you mean {close!r}?" if close else "remove it"
    return f"{source}: unknown key {key!r}{where}; {hint}"


_AT = re.compile(r" - at `\$\.?(.*)`$")


def convert_strict(raw: Any, typ: type[T], source: str) -> T:
    """Convert a decoded TOML document to ``typ`` refusing unknown keys at any depth.

    Raises :class:`UserError`: ``"<source>: unknown key 'targt' in [rules]; did you mean
    'target'?"`` for an unknown key, ``"<source>: <what is wrong> (at rules.target)"`` for a value
    of the wrong type or out of the choices."""
    bad = unknown_keys(raw, typ)  # type: ignore[arg-type]
    if bad:
        section, key, close = bad[0]
        raise UserError(describe_unknown(source, section, key, close, typ))  # type: ignore[arg-type]
    try:
        return msgspec.convert(raw, typ)
    except msgspec.ValidationError as exc:
        text = str(exc)
        m = _AT.search(text)
        where = f" (at {m.group(1)})" if m and m.group(1) else ""
        raise UserError(f"{source}: {_AT.sub('', text)}{where}") from None
