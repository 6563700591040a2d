"""gdb pretty-printers for tchbook's cells: a stopped cell's `Tensor` and `VarStore` read as the
Variables panel shows them between cells (`Tensor[64, 10] f32 cpu 2.5 KiB requires_grad`,
`VarStore 11 parameters 44 B cpu`) and expand into the same fields (a tensor's shape, dtype,
device, ..., a var store's parameters, each expanding into its own), not tch's structs
(`Tensor { c_tensor: 0x... }`).

The line and the fields are the prelude's own (`tchbook_prelude_debugger_value`, exported by the
prelude every cell links), had in one call in the stopped evaluation process: one describer for
both panels. The call runs with the other threads held (scheduler-locking) and with gdb told to
unwind it on a signal or after 5 s, so a local whose memory names a freed tensor (moved out of)
costs that variable its line and fields, shown then as gdb shows it, and never the stopped cell.
A field is no value in the stopped process: it is a `Text`, a gdb value made here that carries
what the prelude said of it, which the printers show as that text.

gdb's debug adapter announces every call into the inferior as a `continued` and a `stopped`
event (`_on_inferior_call` in gdb/dap/events.py): JupyterLab would then drop the stop's frames
and ask for them again, printing the variables again, calling again, without end. A printer's
call is no step of the user's, so it is made unannounced: the adapter's module is told the
inferior runs already (which is how it keeps a breakpoint condition's call quiet), and its
handlers of a resume (which forget the stop's frames and variables) and of a stop are off for
the call. These are gdb 18's internals (the version scripts/requirements.txt
pins); where they are not there, no call is made and values show as gdb prints them.

The kernel writes this file and has gdb `source` it (src/debugger/gdb.rs)."""
import json
import sys

import gdb

# The prelude's `what`, by the type's name as gdb sees it.
DESCRIBED = {
    "tch::wrappers::tensor::Tensor": 0,
    "tch::nn::var_store::VarStore": 1,
}
NAMES = ["Tensor", "VarStore"]
CALL = ("((const char *(*)(unsigned int, const void *)) tchbook_prelude_debugger_value)"
        "(%d, (const void *) %d)")


class Line:
    """A value shown as one line of text."""

    def __init__(self, line):
        self.line = line

    def to_string(self):
        return self.line


class Expanding(Line):
    """A value shown as one line of text that expands into fields: gdb's adapter gives it a
    `variablesReference`, and `variables` on it lists the fields."""

    def __init__(self, line, fields):
        super().__init__(line)
        self.fields = fields

    def children(self):
        for field in self.fields:
            yield field["name"], Text(field["value"], field.get("fields") or [])


class Text(gdb.Value):
    """A field as the prelude describes it (`value`, and the fields it expands into, if any):
    a gdb value (gdb's adapter takes nothing else as a child) that the printers know."""

    def __init__(self, value, fields):
        super().__init__(value)
        self.line = value
        self.fields = fields


def printer(line, fields):
    return Expanding(line, fields) if fields else Line(line)


def described(what, value):
    """The prelude's line and fields of `value` (`{"line", "fields"}`); a line saying why where
    the call failed; None where no call can be made."""
    if value.address is None:
        return None
    language = gdb.parameter("language")
    locking = gdb.parameter("scheduler-locking")
    try:
        # The cast needs C's syntax; gdb's Rust has no function-pointer casts.
        gdb.execute("set language c", to_string=True)
        gdb.execute("set scheduler-locking on", to_string=True)
        answer = unannounced(CALL % (what, int(value.address)))
        if answer is None or not int(answer):
            return None
        return json.loads(answer.string("utf-8"))
    except gdb.error as error:
        # A fault or the timeout, unwound. A fault is most likely a local moved out of or
        # dropped, whose memory names a freed value; a timeout, a lock a held thread has.
        why = (str(error).strip().splitlines() or ["the call failed"])[0]
        guess = " (moved out of or dropped?)" if "signal" in why else ""
        return {"line": "%s not readable%s: %s" % (NAMES[what], guess, why)}
    except ValueError:
        return None
    finally:
        gdb.execute("set scheduler-locking %s" % locking, to_string=True)
        gdb.execute("set language %s" % language, to_string=True)


# What gdb 18's debug adapter does when the inferior resumes (`gdb.events.cont`): it forgets the
# stop's frames, scopes and variables (the very ones being printed) and sends `continued`.
ON_RESUME = [("gdb.dap.frames", "_clear_frame_ids"), ("gdb.dap.varref", "clear_vars"),
             ("gdb.dap.scopes", "clear_scopes"), ("gdb.dap.globalvars", "clear"),
             ("gdb.dap.events", "_cont")]


def unannounced(expression):
    """`expression` (a call) evaluated without the debug adapter hearing of it; None where the
    adapter's handlers cannot all be reached."""
    adapter = sys.modules.get("gdb.dap.events")
    on_resume = [getattr(sys.modules.get(module), name, None) for module, name in ON_RESUME]
    if adapter is None or not hasattr(adapter, "inferior_running") or None in on_resume:
        return None
    running = adapter.inferior_running
    adapter.inferior_running = True
    gdb.events.stop.disconnect(adapter._on_stop)
    for handler in on_resume:
        gdb.events.cont.disconnect(handler)
    try:
        return gdb.parse_and_eval(expression)
    finally:
        for handler in on_resume:
            gdb.events.cont.connect(handler)
        gdb.events.stop.connect(adapter._on_stop)
        adapter.inferior_running = running


def lookup(value):
    if isinstance(value, Text):
        return printer(value.line, value.fields)
    name = value.type.strip_typedefs().unqualified().name
    what = DESCRIBED.get(name)
    if what is None:
        return None
    answer = described(what, value)
    if not isinstance(answer, dict) or not isinstance(answer.get("line"), str):
        return None
    return printer(answer["line"], answer.get("fields") or [])


gdb.execute("set unwindonsignal on", to_string=True)
gdb.execute("set unwind-on-timeout on", to_string=True)
gdb.execute("set direct-call-timeout 5", to_string=True)
gdb.pretty_printers.insert(0, lookup)
