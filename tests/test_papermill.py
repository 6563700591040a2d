"""papermill on Rust notebooks (python/tchbook/papermill.py, README "papermill and nbmake").

The translation is checked where it matters, by rustc: the cell papermill would inject is compiled
as a program that prints each binding back, so a wrong escape or a type Rust does not infer fails
here, not in a user's run. The end-to-end tests install the wheel into a fresh venv with the pinned
papermill (tests/wheel_venv.py), so papermill finds the translator only through the wheel's entry
point, install the wheel's kernelspec there and run papermill's own command line with `-k tchbook`
on a notebook with a `parameters` cell: the injected values are what a later cell prints.

Needs rustc (the kernel needs it too); the end-to-end tests need pip to reach the package
registry, as tests/test_hosted.py does, and the kernel's build cache (`tchbook install`).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from wheel_venv import ROOT, pinned, run, venv_with_wheel

sys.path.insert(0, str(ROOT / "python"))
from tchbook.papermill import RustTranslator, rust_str  # noqa: E402

# --- the translation ---------------------------------------------------------------------------

def test_values_get_the_types_a_rust_user_writes():
    cell = RustTranslator.codify({"lr": 0.01, "epochs": 3, "name": "x", "flag": True, "small": 1e-05,
                                  "sizes": [1, 2], "mixed": [1, 2.5], "names": ["a", "b"],
                                  "lookup": {"a": 1, "b": 2}})
    assert cell.splitlines() == [
        "// Parameters",
        "let lr = 0.01_f64;",
        "let epochs = 3_i64;",
        'let name = "x";',
        "let flag = true;",
        "let small = 1e-05_f64;",
        "let sizes = vec![1_i64, 2_i64];",
        "let mixed = vec![1.0_f64, 2.5_f64];",
        'let names = vec!["a", "b"];',
        'let lookup = std::collections::HashMap::from([("a", 1_i64), ("b", 2_i64)]);',
    ]


def test_strings_are_escaped_and_unicode_kept():
    assert rust_str('say "hi"') == r'"say \"hi\""'
    assert rust_str("C:\\temp\\") == r'"C:\\temp\\"'
    assert rust_str("two\nlines\r\n\tend\x00") == r'"two\nlines\r\n\tend\u{0}"'
    assert rust_str("héllo, 日本, 🦀") == '"héllo, 日本, 🦀"'
    # rustc rejects bidi controls written literally; invisible characters are shown as escapes.
    assert rust_str("a\u202eb\u200bc\u2028") == r'"a\u{202e}b\u{200b}c\u{2028}"'
    assert rust_str('r#"raw"#') == r'"r#\"raw\"#"'


def test_injected_cell_compiles_and_reads_back_every_value(tmp_path):
    values = {
        "lr": 0.01, "tiny": 5e-324, "huge": 1.7976931348623157e308, "big": 1e16, "third": 1 / 3,
        "lo": -(2**63), "hi": 2**63 - 1, "epochs": 3,
        "text": 'quote " backslash \\ newline \n cr \r tab \t nul \x00 bidi \u202e zw \u200b é 日本 🦀 \x7f',
        "flag": False, "sizes": [2, -3], "grid": [[1.5], [2.0, 0.25]], "names": ["a\nb", "c"],
        "weights": {"x": 0.5}, "by_id": {7: "seven"},
    }
    program = tmp_path / "params.rs"
    prints = "\n".join(f'println!("{{:?}}", {name});' for name in values)
    program.write_text("fn main() {\n" + RustTranslator.codify(values) + prints + "\n}\n")
    binary = tmp_path / "params"
    run(["rustc", "--edition", "2021", "-o", str(binary), str(program)])
    printed = run([str(binary)]).stdout.splitlines()
    assert len(printed) == len(values)
    read = dict(zip(values, printed))
    for name in ("lr", "tiny", "huge", "big", "third"):
        assert float(read[name]) == values[name], (name, read[name])
    for name in ("lo", "hi", "epochs"):
        assert int(read[name]) == values[name], (name, read[name])
    assert read["flag"] == "false"
    assert read["sizes"] == "[2, -3]" and read["grid"] == "[[1.5], [2.0, 0.25]]"
    assert read["weights"] == '{"x": 0.5}' and read["by_id"] == '{7: "seven"}'
    assert read["names"] == r'["a\nb", "c"]'
    # Debug escapes what it escapes; the value itself must be the same string.
    assert rust_debug_str(read["text"]) == values["text"]


def rust_debug_str(text: str) -> str:
    """The string that Rust's `{:?}` printed as `text`."""
    assert text[0] == text[-1] == '"'
    out, i, body = [], 0, text[1:-1]
    simple = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", '"': '"', "\\": "\\", "'": "'"}
    while i < len(body):
        if body[i] != "\\":
            out.append(body[i])
            i += 1
        elif body[i + 1] in simple:
            out.append(simple[body[i + 1]])
            i += 2
        else:  # \u{...}
            end = body.index("}", i)
            out.append(chr(int(body[i + 3:end], 16)))
            i = end + 1
    return "".join(out)


def test_non_finite_floats_are_f64_constants():
    assert RustTranslator.translate(float("nan")) == "f64::NAN"
    assert RustTranslator.translate(float("inf")) == "f64::INFINITY"
    assert RustTranslator.translate(float("-inf")) == "f64::NEG_INFINITY"


def test_keyword_names_are_raw_identifiers():
    assert RustTranslator.assign("type", '"a"') == 'let r#type = "a";'


def test_unicode_names_are_rust_names(tmp_path):
    program = tmp_path / "names.rs"
    program.write_text("fn main() {\n" + RustTranslator.codify({"größe": 3, "r\u00e9sum\u00e9": "x"})
                       + 'println!("{} {}", größe, r\u00e9sum\u00e9);\n}\n')
    run(["rustc", "--edition", "2021", "-o", str(tmp_path / "names"), str(program)])
    assert run([str(tmp_path / "names")]).stdout == "3 x\n"


@pytest.mark.parametrize("name, value, reason", [
    ("checkpoint", None, "Rust has no untyped null"),
    ("sizes", [], "empty"),
    ("mixed", [1, "a"], "several types"),
    ("table", {"a": 1, "b": "x"}, "several types"),
    ("by_float", {0.5: 1, 1: 2}, "not a HashMap key"),
    ("nested", [None], "untyped null"),
    ("seed", 2**63, "does not fit in an i64"),
    ("when", __import__("datetime").date(2026, 1, 1), "no Rust spelling"),
    ("text", "\ud800", "lone surrogate"),
])
def test_values_rust_cannot_hold_are_refused_naming_the_parameter(name, value, reason):
    with pytest.raises(ValueError) as refused:
        RustTranslator.codify({"lr": 0.1, name: value})
    assert f"papermill parameter `{name}`" in str(refused.value) and reason in str(refused.value)


@pytest.mark.parametrize("name", ["my-param", "2fast", "self", "_", "e\u0301t\u00e9"])
def test_names_that_are_not_rust_variables_are_refused(name):
    with pytest.raises(ValueError, match=f"`{name}` is not a Rust variable name"):
        RustTranslator.codify({name: 1})


def test_translator_is_found_by_kernel_name_and_by_language():
    from papermill.translators import papermill_translators

    assert papermill_translators.find_translator("tchbook", "python") is RustTranslator
    assert papermill_translators.find_translator("evcxr", "rust") is RustTranslator


def test_inspect_reads_the_parameters_cell():
    cell = new_code_cell("let lr: f64 = 0.1; // learning rate\nlet mut epochs = 2;\nprintln!(\"no\");")
    params = RustTranslator.inspect(cell)
    assert [(p.name, p.inferred_type_name, p.default, p.help) for p in params] == [
        ("lr", "f64", "0.1", "learning rate"), ("epochs", "None", "2", "")]


# --- papermill's command line, with the wheel ---------------------------------------------------

PARAMETERS = """\
let lr: f64 = 0.1; // learning rate
let epochs: i64 = 1;
let name: &str = "default";
let flag: bool = false;
let sizes: Vec<i64> = vec![1];"""
# Typed uses: a parameter of another type than the parameters cell's would not compile here.
USES = """\
let steps: i64 = epochs * sizes.len() as i64;
let scaled: f64 = lr * 2.0;
let shown: String = if flag { name.to_uppercase() } else { name.to_string() };
println!("lr={lr} epochs={epochs} steps={steps} scaled={scaled} name={shown:?} sizes={sizes:?}");"""


@pytest.fixture(scope="module")
def papermill(tmp_path_factory, wheel) -> dict:
    """A fresh venv with the wheel and papermill, and the wheel's kernelspec installed in it."""
    env = venv_with_wheel(tmp_path_factory.mktemp("papermill"), wheel, pinned("papermill"))
    # Only this venv's kernelspecs: a `tchbook` spec of the user's must not be the one that runs.
    env["env"]["JUPYTER_PATH"] = str(env["venv"] / "share" / "jupyter")
    run(["tchbook", "install", "--sys-prefix"], env=env["env"], timeout=1800)
    return env


def parameterised_notebook(path: Path) -> Path:
    nb = new_notebook(cells=[new_markdown_cell("# A parameterised run"), new_code_cell(PARAMETERS),
                             new_code_cell(USES)])
    nb.cells[1].metadata["tags"] = ["parameters"]
    # What notebooks/build.py and the kernel write: papermill reads the language from here.
    nb.metadata["kernelspec"] = {"name": "tchbook", "display_name": "Rust (tchbook)", "language": "rust"}
    nbformat.write(nb, path)
    return path


def papermill_cli(env: dict, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["papermill", *args], capture_output=True, text=True, env=env["env"], cwd=cwd,
                          timeout=900)


def test_papermill_k_tchbook_injects_parameters_a_later_cell_uses(papermill, tmp_path):
    source = parameterised_notebook(tmp_path / "in.ipynb")
    done = papermill_cli(papermill, "-k", "tchbook", str(source), "out.ipynb", "-p", "lr", "0.01",
                         "-p", "epochs", "3", "-p", "name", 'Ada "x" \\ é', "-p", "flag", "True",
                         "-y", "sizes: [2, 3]", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    injected = out.cells[2]
    assert injected.metadata["tags"] == ["injected-parameters"], injected.metadata
    assert "let lr = 0.01_f64;" in injected.source and "let epochs = 3_i64;" in injected.source
    printed = "".join(o.get("text", "") for o in out.cells[3].outputs if o.output_type == "stream")
    assert printed == 'lr=0.01 epochs=3 steps=6 scaled=0.02 name="ADA \\"X\\" \\\\ É" sizes=[2, 3]\n'
    # The kernel's own language_info replaces what the notebook carried.
    assert out.metadata["language_info"]["name"] == "rust", out.metadata["language_info"]
    assert out.metadata["papermill"]["parameters"]["epochs"] == 3


def test_papermill_refuses_none_before_any_kernel_starts(papermill, tmp_path):
    source = parameterised_notebook(tmp_path / "in.ipynb")
    done = papermill_cli(papermill, "-k", "tchbook", str(source), "out.ipynb", "-p", "name", "None",
                         cwd=tmp_path)
    assert done.returncode != 0
    assert "papermill parameter `name` cannot be written in Rust" in done.stderr, done.stderr
    assert not (tmp_path / "out.ipynb").exists() or not any(
        c.get("outputs") for c in json.loads((tmp_path / "out.ipynb").read_text())["cells"])


def test_papermill_help_notebook_lists_the_rust_parameters(papermill, tmp_path):
    source = parameterised_notebook(tmp_path / "in.ipynb")
    done = papermill_cli(papermill, "--help-notebook", str(source), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "lr: f64 (default 0.1)" in done.stdout and "learning rate" in done.stdout, done.stdout
    assert "sizes: Vec<i64> (default vec![1])" in done.stdout, done.stdout


def test_shipped_parameters_cells_are_rust_bindings_papermill_can_override():
    """A shipped notebook's `parameters` cell holds only `let` bindings of the types the
    translator writes, so that an injected cell shadows each of them with the same type."""
    found = 0
    for path in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if "parameters" not in cell.metadata.get("tags", []):
                continue
            found += 1
            params = RustTranslator.inspect(cell)
            code = [line for line in cell.source.splitlines() if line.strip() and not line.strip().startswith("//")]
            assert len(params) == len(code), f"{path.name}: a line of its parameters cell is not a `let`"
            assert {p.inferred_type_name for p in params} <= {"i64", "f64", "bool", "&str"}, (path.name, params)
    assert found, "no shipped notebook has a parameters cell"
