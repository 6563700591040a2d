"""The official jupyter_kernel_test suite against the tchbook kernel, every sample filled for Rust.

Run from the repository root with the venv's Python (jupyter_kernel_test, jupyter_client):

    TCHBOOK_BIN=target/release/tchbook python -m unittest -v tests/test_kernel_spec.py

The kernelspec is written to a temporary JUPYTER_PATH entry pointing at TCHBOOK_BIN, so
nothing needs installing. Build tch and the prelude first (`tchbook install`): the suite's
first cell has the suite's 15 s timeout.
"""

import json
import os
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = os.environ.get("TCHBOOK_BIN", str(ROOT / "target" / "release" / "tchbook"))

_SPEC_ROOT = tempfile.mkdtemp(prefix="tchbook-kernelspec-")
_spec_dir = Path(_SPEC_ROOT) / "kernels" / "tchbook-under-test"
_spec_dir.mkdir(parents=True)
(_spec_dir / "kernel.json").write_text(
    json.dumps(
        {
            "argv": [BINARY, "kernel", "--connection-file", "{connection_file}"],
            "display_name": "Rust (tchbook, under test)",
            "language": "rust",
            "interrupt_mode": "message",
        }
    )
)
os.environ["JUPYTER_PATH"] = os.pathsep.join(
    p for p in [_SPEC_ROOT, os.environ.get("JUPYTER_PATH", "")] if p
)

import jupyter_kernel_test  # noqa: E402  (reads JUPYTER_PATH when kernels start)

KERNEL_NAME = "tchbook-under-test"


def display_line(payload: dict) -> str:
    """A cell that prints one live display protocol line (see DEVELOPERS.md), keyed with the
    kernel's line key as the prelude keys it (a line without the key is text)."""
    text = "TCHBOOK_DISPLAY " + json.dumps(payload)
    return ('println!("\\u{1e}{} {}", std::env::var("TCHBOOK_LINE_KEY").unwrap(), '
            + json.dumps(text) + ");")


class TchbookKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = KERNEL_NAME

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        # kernel_info is answered at once, but the first cell waits until the evaluation
        # process has loaded the prelude (seconds from a warm build cache; the tch build
        # itself on a cold one). The suite gives every request 15 s, so wait here first.
        reply = cls.kc.execute_interactive("1", timeout=900, output_hook=lambda msg: None)
        assert reply["content"]["status"] == "ok", reply["content"]
    language_name = "rust"
    file_extension = ".rs"

    code_hello_world = 'println!("hello, world");'
    code_stderr = 'eprintln!("something went to stderr");'

    completion_samples = [
        {"text": "let zebra_count = 3; zebra_c", "matches": {"zebra_count"}},
        {"text": "fn tchbook_helper_fn() {}\ntchbook_helper_", "matches": {"tchbook_helper_fn"}},
    ]

    complete_code_samples = ["let x = 5;", "fn f() -> i32 { 1 }", "1 + 1", ":dep rand"]
    incomplete_code_samples = ["fn f() {", "let v = vec![1,", 'let s = "open']
    invalid_code_samples = ["let = ;", "fn f() { } }"]

    code_page_something = "?Tensor"

    code_generate_error = 'panic!("this cell fails");'

    code_execute_result = [
        {"code": "6 * 7", "result": "42"},
        {"code": '"text".to_uppercase()', "result": '"TEXT"'},
        {"code": "Tensor::from_slice(&[1i64, 2, 3]).sum(Kind::Int64).int64_value(&[])", "result": "6"},
    ]

    code_display_data = [
        {
            "code": display_line(
                {"op": "display", "data": {"text/html": "<b>bold</b>", "text/plain": "bold"},
                 "metadata": {}, "display_id": None}
            ),
            "mime": "text/html",
        },
        {
            "code": display_line(
                {"op": "display", "data": {"image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'/>"},
                 "metadata": {}, "display_id": "plot-1"}
            ),
            "mime": "image/svg+xml",
        },
    ]

    code_history_pattern = "6 * 7"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "Tensor"

    code_clear_output = display_line({"op": "clear", "wait": False})


class TchbookIopubWelcomeTests(jupyter_kernel_test.IopubWelcomeTests):
    kernel_name = KERNEL_NAME
    support_iopub_welcome = True


if __name__ == "__main__":
    unittest.main()
