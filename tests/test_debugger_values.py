"""A stopped cell's tensors and var stores in JupyterLab's debugger, over the protocol: they
read and expand as the Variables panel shows them between cells (the prelude's line and fields,
had by gdb's printers in the stopped process), inside a `Vec` and a model's layer too, without
the adapter announcing the calls as a resume; a local whose tensor was dropped costs only its own
line. The client and the kernel are tests/debugger_client.py's, the `debugger` fixture
conftest.py's."""
from __future__ import annotations

import pytest


def test_a_stopped_cells_tensors_read_as_the_variables_panel_shows_them(debugger):
    code = """let xs = Tensor::randn([64, 10], (Kind::Float, Device::Cpu)).set_requires_grad(true);
let vs = nn::VarStore::new(Device::Cpu);
let model = nn::linear(vs.root(), 10, 1, Default::default());
let batch = vec![Tensor::zeros([2, 3], (Kind::Int64, Device::Cpu))];
let wide = Tensor::ones([400, 250], (Kind::Float, Device::Cpu));
let n = xs.size()[0];
n"""
    debugger.switch_on()
    debugger.breakpoint(code, [6])
    msg_id = debugger.start(code)
    thread = debugger.event("stopped")["body"]["threadId"]
    seen = len(debugger.events)
    frame = debugger.top_frame(thread)
    local = debugger.locals(frame["id"])
    # The prelude's own lines (the Variables panel's between cells), not tch's structs.
    assert local["xs"] == "Tensor[64, 10] f32 cpu 2.5 KiB requires_grad", local
    assert local["vs"] == "VarStore 11 parameters 44 B cpu", local
    assert local["batch"] == "Vec(size=1)", local
    listed = debugger.local_variables(frame["id"])

    # A tensor expands into the Variables panel's fields, with the stopped tensor's values.
    fields = {name: f["value"] for name, f in debugger.expand(listed["xs"]).items()}
    assert list(fields) == ["shape", "dtype", "device", "numel", "bytes", "requires_grad", "grad",
                            "min", "max", "mean"], fields
    assert (fields["shape"], fields["dtype"], fields["device"], fields["numel"], fields["bytes"],
            fields["requires_grad"], fields["grad"]) == ("[64, 10]", "f32", "cpu", "640", "2560",
                                                         "true", "None"), fields
    low, high, mean = float(fields["min"]), float(fields["max"]), float(fields["mean"])
    assert low < mean < high and -1 < mean < 1, fields
    # The fields themselves expand into nothing.
    assert not any(f["variablesReference"] for f in debugger.expand(listed["xs"]).values())

    # A var store expands into its parameters by name, each a tensor expanding into its fields.
    parameters = debugger.expand(listed["vs"])
    assert {name: p["value"] for name, p in parameters.items()} == {
        "weight": "Tensor[1, 10] f32 cpu 40 B requires_grad",
        "bias": "Tensor[1] f32 cpu 4 B requires_grad"}, parameters
    weight = {name: f["value"] for name, f in debugger.expand(parameters["weight"]).items()}
    assert (weight["shape"], weight["dtype"], weight["requires_grad"]) == ("[1, 10]", "f32", "true"), weight

    # A tensor inside a `Vec`, and inside a model's struct (a layer), expands the same way.
    items = debugger.expand(listed["batch"])
    assert [i["value"] for i in items.values()] == ["Tensor[2, 3] i64 cpu 48 B"], items
    item = {name: f["value"] for name, f in debugger.expand(next(iter(items.values()))).items()}
    assert (item["shape"], item["dtype"], item["numel"]) == ("[2, 3]", "i64", "6"), item
    assert "min" not in item, "statistics are the floating-point tensors'"
    layer = debugger.expand(listed["model"])
    assert layer["ws"]["value"] == parameters["weight"]["value"], layer
    assert debugger.expand(layer["ws"])["shape"]["value"] == "[1, 10]"

    # Statistics over more elements than libtorch's grain (32,768), which libtorch would hand to
    # OpenMP's workers, held while the cell is stopped: computed on the stopped thread alone
    # (else the call waits for them until gdb's timeout unwinds it, and the cell never ends).
    wide = {name: f["value"] for name, f in debugger.expand(listed["wide"]).items()}
    assert (wide["numel"], wide["min"], wide["max"], wide["mean"]) == (
        "100000", "1.000000", "1.000000", "1.000000"), wide

    watched = debugger.ok("evaluate", {"expression": "xs", "frameId": frame["id"], "context": "watch"})
    assert watched["result"] == local["xs"], watched
    assert debugger.expand(watched)["dtype"]["value"] == "f32"
    # Describing runs code in the stopped process: gdb's adapter must not announce it as a
    # resume and a stop (JupyterLab would drop the stop's frames and print them again, forever).
    with pytest.raises(AssertionError, match="no `stopped` event"):
        debugger.event("stopped", timeout=2)
    resumed = [e for e in debugger.events[seen:] if e.get("event") in ("stopped", "continued")]
    assert not resumed, resumed
    assert debugger.ok("debugInfo")["stoppedThreads"] == [thread]
    assert debugger.locals(frame["id"])["xs"] == local["xs"], "the frame is still the stop's"

    debugger.ok("continue", {"threadId": thread})
    assert debugger.reply(msg_id)["status"] == "ok"
    assert debugger.run("xs.size()")["status"] == "ok"


def test_a_freed_tensors_local_costs_only_its_own_fields(debugger):
    # `gone`'s slot still names its tensor after the drop: describing it reads freed memory,
    # which may fault. gdb unwinds that call; the cell, its other locals and the notebook's
    # variables are untouched.
    code = """let n = {
    let gone = Tensor::ones([3], (Kind::Float, Device::Cpu));
    drop(gone);
    let kept = Tensor::ones([5], (Kind::Float, Device::Cpu));
    kept.size()[0]
};
n"""
    assert debugger.run("let earlier = 7;")["status"] == "ok"
    debugger.switch_on()
    debugger.breakpoint(code, [5])
    msg_id = debugger.start(code)
    thread = debugger.event("stopped")["body"]["threadId"]
    frame = debugger.top_frame(thread)
    listed = debugger.local_variables(frame["id"])
    # Says so ("Tensor not readable (moved out of or dropped?): ... SIGSEGV ..."), or, where
    # the freed memory was taken again by a tensor, reads as that one.
    assert listed["gone"]["value"].startswith("Tensor"), listed["gone"]
    if listed["gone"]["variablesReference"]:
        debugger.request("variables", {"variablesReference": listed["gone"]["variablesReference"]})
    assert listed["kept"]["value"] == "Tensor[5] f32 cpu 20 B", listed
    kept = {name: f["value"] for name, f in debugger.expand(listed["kept"]).items()}
    assert (kept["shape"], kept["min"], kept["max"]) == ("[5]", "1.000000", "1.000000"), kept
    assert debugger.ok("debugInfo")["stoppedThreads"] == [thread]

    debugger.ok("continue", {"threadId": thread})
    reply = debugger.reply(msg_id)
    assert reply["status"] == "ok", reply
    assert debugger.run("assert_eq!(earlier as i64 + n, 12);")["status"] == "ok"
