"""How the console script ends: its objects frozen before the interpreter's last collection,
its exit handlers still run."""

from __future__ import annotations

import subprocess
import sys


def test_the_cli_freezes_its_objects_before_the_interpreter_exits():
    """The last collection at exit then skips them (see ``fuzzer.cli.main``); the exit
    handlers still run after the command."""
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 10000))\n"
            "sys.argv = ['optfuzz', 'targets']\n"
            "from fuzzer.cli import main\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("frozen True")
