"""papermill's translator for Rust notebooks: `papermill -k tchbook IN.ipynb OUT.ipynb -p lr 0.01`.

papermill writes the parameters it is given as a code cell in the notebook's language, placed
after the cell tagged `parameters`. It finds the translator by kernel name, then by language, in
`papermill.translators.papermill_translators`; this module registers `RustTranslator` there under
the kernel name `tchbook` and the language `rust` (the kernelspec's `language` and the kernel's
`language_info.name`). papermill reads no entry point group for translators; it does import every
`papermill.engine` entry point when it starts, so python/pyproject.toml names `RustEngine` (which
is nbclient's engine, unchanged) there, and importing this module for it registers the translator.

What a parameter becomes, so that it shadows the parameters cell's binding of the same name with
the type a Rust user gives it there:

    int             let epochs = 3_i64;                     (out of i64's range: refused)
    float           let lr = 0.01_f64;                      (f64::NAN, f64::INFINITY, ...)
    bool            let flag = true;
    str             let name = "x";                         (&'static str, escaped; see `rust_str`)
    list            let sizes = vec![1_i64, 2_i64];         (one element type; ints among floats
                                                             become f64; empty: refused)
    dict            let m = std::collections::HashMap::from([("a", 1_i64)]);
                                                            (one key type, one value type)
    None            refused: Rust has no untyped null, and `None::<()>` would shadow the
                    parameters cell's `Option<T>` with an `Option<()>` that breaks every later use.

A refusal is a `ValueError` naming the parameter, before any cell runs. papermill's CLI reads
`-p flag True` as a bool and `-p flag true` as the string "true" (`-y "flag: true"` is a bool too).
"""
from __future__ import annotations

import math
import re
import unicodedata

from papermill.engines import NBClientEngine
from papermill.models import Parameter
from papermill.translators import Translator, papermill_translators

__all__ = ["RustEngine", "RustTranslator", "rust_str"]

# Rust's strict and reserved keywords (2021 edition and later): a parameter named so is written as
# a raw identifier, `r#type`, which is also how the parameters cell must have bound it.
RUST_KEYWORDS = frozenset("""
    as break const continue crate else enum extern false fn for if impl in let loop match mod move
    mut pub ref return self Self static struct super trait true type unsafe use where while async
    await dyn abstract become box do final macro override priv typeof unsized virtual yield try gen
""".split())
# Keywords that cannot be raw identifiers.
NOT_RAW = frozenset({"crate", "self", "Self", "super", "_"})
I64 = (-(2**63), 2**63 - 1)


class Refused(ValueError):
    """A value with no faithful Rust spelling; `RustTranslator.codify` adds the parameter's name."""


def rust_str(text: str) -> str:
    """A Rust string literal holding exactly `text`.

    Escaped rather than raw (`r#"..."#`): a raw string cannot hold a carriage return, and rustc
    rejects bidirectional-override characters written literally in any literal. Quotes,
    backslashes, control characters (newline, tab, CR, NUL...) and invisible format characters
    (bidi controls, zero-width joiners) are escaped; other Unicode is written as itself.
    """
    out = []
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            raise Refused(f"the string holds a lone surrogate (U+{ord(ch):04X}), which no Rust string can")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def rust_type(val) -> str:
    """The Rust type `RustTranslator.translate` gives `val` (raises Refused where it gives none)."""
    if val is None:
        raise Refused("it is None: Rust has no untyped null. Give the parameters cell a value "
                      "that says 'none' in its type (an empty string, 0, a bool flag) and pass that")
    if isinstance(val, bool):
        return "bool"
    if isinstance(val, int):
        if not I64[0] <= val <= I64[1]:
            raise Refused(f"{val} does not fit in an i64")
        return "i64"
    if isinstance(val, float):
        return "f64"
    if isinstance(val, str):
        return "&str"
    if isinstance(val, list):
        return f"Vec<{element_type(val, 'list')}>"
    if isinstance(val, dict):
        key = element_type(list(val), "dict key")
        if key == "f64":
            raise Refused("its keys are floats, and f64 is not a HashMap key in Rust (no Eq, no Hash)")
        return f"HashMap<{key}, {element_type(list(val.values()), 'dict value')}>"
    raise Refused(f"a {type(val).__name__} has no Rust spelling here")


def element_type(items: list, what: str) -> str:
    """The one type of `items`; ints among floats count as f64, as a Rust user would write them."""
    if not items:
        raise Refused(f"it is empty, so the {what}'s element type cannot be told; give it one element")
    types = {rust_type(v) for v in items}
    if types == {"i64", "f64"}:
        return "f64"
    if len(types) != 1:
        raise Refused(f"its {what}s are of several types ({', '.join(sorted(types))}); "
                      "a Rust collection holds one")
    return types.pop()


class RustTranslator(Translator):
    @classmethod
    def translate_none(cls, val):
        rust_type(val)  # raises the refusal

    @classmethod
    def translate_int(cls, val):
        rust_type(val)
        return f"{val}_i64"

    @classmethod
    def translate_float(cls, val):
        if math.isnan(val):
            return "f64::NAN"
        if math.isinf(val):
            return "f64::INFINITY" if val > 0 else "f64::NEG_INFINITY"
        text = repr(val)  # the shortest text that reads back as this float: 0.01, 1e-05, 1e+16
        return f"{text}_f64"

    @classmethod
    def translate_str(cls, val):
        return rust_str(val)

    @classmethod
    def translate_escaped_str(cls, val):
        raise Refused(f"a {type(val).__name__} has no Rust spelling here")

    @classmethod
    def translate_as(cls, val, type_name: str) -> str:
        """`val` written as `type_name` (an int in a list of floats is written as an f64)."""
        if type_name == "f64" and isinstance(val, int) and not isinstance(val, bool):
            return cls.translate_float(float(val))
        if isinstance(val, list):
            inner = type_name[len("Vec<"):-1]
            return "vec![" + ", ".join(cls.translate_as(v, inner) for v in val) + "]"
        if isinstance(val, dict):
            key, value = element_type(list(val), "dict key"), element_type(list(val.values()), "dict value")
            pairs = ", ".join(f"({cls.translate_as(k, key)}, {cls.translate_as(v, value)})" for k, v in val.items())
            return f"std::collections::HashMap::from([{pairs}])"
        return cls.translate(val)

    @classmethod
    def translate_list(cls, val):
        return cls.translate_as(val, rust_type(val))

    @classmethod
    def translate_dict(cls, val):
        return cls.translate_as(val, rust_type(val))

    @classmethod
    def comment(cls, cmt_str):
        return f"// {cmt_str}".strip()

    @classmethod
    def assign(cls, name, str_val):
        return f"let {rust_name(name)} = {str_val};"

    @classmethod
    def codify(cls, parameters, comment="Parameters"):
        lines = [cls.comment(comment)]
        for name, val in parameters.items():
            try:
                lines.append(cls.assign(name, cls.translate(val)))
            except Refused as e:
                raise ValueError(f"papermill parameter `{name}` cannot be written in Rust: {e}") from None
        return "\n".join(lines) + "\n"

    @classmethod
    def inspect(cls, parameters_cell):
        """The `let` bindings of the parameters cell, for `papermill --help-notebook`: one per line,
        `let [mut] NAME[: TYPE] = DEFAULT; // HELP`."""
        found = []
        for line in parameters_cell.source.splitlines():
            m = LET.match(line)
            if m:
                found.append(Parameter(name=m["name"], inferred_type_name=(m["type"] or "None").strip(),
                                       default=m["default"].strip(), help=(m["help"] or "").strip()))
        return found


LET = re.compile(r"^\s*let\s+(?:mut\s+)?(?P<name>(?:r#)?[^\W\d]\w*)\s*(?::\s*(?P<type>[^=]+?))?\s*="
                 r"\s*(?P<default>.+?);\s*(?://\s*(?P<help>.*))?$")


def rust_name(name: str) -> str:
    """`name` as a Rust binding: itself, or a raw identifier for a keyword."""
    # Python's identifiers are Unicode's (UAX #31), as Rust's are; Rust also wants them in NFC.
    if not name.isidentifier() or unicodedata.normalize("NFC", name) != name or name in NOT_RAW:
        raise ValueError(f"papermill parameter `{name}` is not a Rust variable name "
                         "(letters, digits and underscores, not starting with a digit)")
    if name in RUST_KEYWORDS:
        return f"r#{name}"
    return name


class RustEngine(NBClientEngine):
    """nbclient's engine, unchanged: named in the `papermill.engine` entry point group so that
    papermill imports this module, and so registers `RustTranslator`, whenever it starts."""


papermill_translators.register("tchbook", RustTranslator)
papermill_translators.register("rust", RustTranslator)
