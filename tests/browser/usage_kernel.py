"""An ipykernel whose `usage_reply` is whatever a test writes, for tests/browser/test_gpu_panel.py:
the GPU panel's states for replies that are wrong in every way it must survive.

The file named by $USAGE_SCRIPT holds JSON merged into ipykernel's own reply content (`{"gpus":
[...]}`), or the word `silent`, for a kernel that never answers; it is read at each request.
Everything else is ipykernel's, so cells run as usual.

Run as `python usage_kernel.py -f CONNECTION_FILE`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelapp import IPKernelApp


class ScriptedUsageKernel(IPythonKernel):
    async def usage_request(self, stream, ident, parent):
        script = Path(os.environ["USAGE_SCRIPT"]).read_text().strip()
        if script == "silent":
            return
        extra = json.loads(script)
        real_send = self.session.send

        def send(stream_, msg_type, content=None, *args, **kwargs):
            if msg_type == "usage_reply":
                content = {**(content or {}), **extra}
            return real_send(stream_, msg_type, content, *args, **kwargs)

        self.session.send = send
        try:
            await super().usage_request(stream, ident, parent)
        finally:
            del self.session.send


if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=ScriptedUsageKernel)
