"""The write bridge's process (``python -m hudi_md.spark.bridge``) as the shim starts it ahead of a
write: it waits on stdin for its assignment, exits quietly when stdin ends without one (the JVM is
gone, or stopped it), and refuses a malformed assignment or a terminal by name. The writes it
serves are tested through Spark (tests/spark/test_dataframe_writer.py)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

BRIDGE = [sys.executable, "-m", "hudi_md.spark.bridge"]


def test_a_process_whose_stdin_ends_before_its_assignment_exits_quietly() -> None:
    proc = subprocess.run(BRIDGE, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_a_malformed_assignment_is_refused_by_name() -> None:
    for line in ("not json\n", '{"port": 1}\n', "[1, 2, 3]\n"):
        proc = subprocess.run(BRIDGE, input=line, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (line, proc.stderr)
        assert "bad assignment from the shim" in proc.stderr, proc.stderr


def test_started_by_hand_it_says_so() -> None:
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(BRIDGE, stdin=follower, capture_output=True, text=True, timeout=120)
    finally:
        os.close(leader)
        os.close(follower)
    assert proc.returncode == 2
    assert "started by the hudi-md Spark shim, not by hand" in proc.stderr
