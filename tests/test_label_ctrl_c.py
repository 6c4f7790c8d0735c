"""A Ctrl-C at a `judge label` prompt always stops it, even one whose signal handler runs just before the terminal is
read (on a busy machine the process can be descheduled right after writing the prompt). Python's input() reads the
terminal without looking at a signal handled before the read began: the Ctrl-C then waits for the next line typed.

The race is made certain here: SIGINT is sent to a helper thread once the prompt's thread sleeps in the kernel, so its
handler runs beside the read and never interrupts it, exactly as when it runs just before the read begins."""
from __future__ import annotations

import os
import pty
import signal
import threading
import time
from pathlib import Path

import pytest

from judge.gold.labelling import typed

pytestmark = pytest.mark.unit

RESCUE_AFTER = 5.0  # seconds: then a line is typed, so a missed Ctrl-C fails the test instead of hanging it


def sleeping_in_the_kernel(tid: int) -> bool:
    """The thread waits in a system call other than a lock (a read, a select): /proc's state S, not in a futex."""
    task = Path(f"/proc/self/task/{tid}")
    state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
    return state == "S" and "futex" not in (task / "wchan").read_text()


@pytest.fixture
def terminal():
    master, slave = pty.openpty()
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in `python -m judge`
    yield master, slave
    signal.signal(signal.SIGINT, before)
    os.close(master)
    os.close(slave)


def test_a_ctrl_c_handled_while_the_prompt_waits_stops_it_at_once(terminal, capsys):
    master, slave = terminal
    main = threading.main_thread().native_id
    stopped = threading.Event()
    sent = threading.Event()

    def ctrl_c_then_rescue() -> None:
        deadline = time.monotonic() + 30
        while not sleeping_in_the_kernel(main) and time.monotonic() < deadline:
            time.sleep(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # handled on this thread, beside the read
        sent.set()
        if not stopped.wait(RESCUE_AFTER):
            os.write(master, b"1\n")

    helper = threading.Thread(target=ctrl_c_then_rescue)
    helper.start()
    got, start = [], time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            got.append(typed("Score (0, 1, 2): ", slave))
            time.sleep(RESCUE_AFTER)  # a Ctrl-C raised only after the line was read is not the stop asked for
    finally:
        stopped.set()
        helper.join()
    assert sent.is_set() and got == [] and time.monotonic() - start < RESCUE_AFTER
    assert capsys.readouterr().out == "Score (0, 1, 2): "


def test_a_line_typed_is_read_as_input_reads_it(terminal, capsys):
    master, slave = terminal
    os.write(master, "2 \u00e9\n".encode())
    assert typed("Note: ", slave) == "2 \u00e9"
    os.write(master, b"\x04")  # Ctrl-D at the start of a line: the end of input, as for input()
    with pytest.raises(EOFError):
        typed("Note: ", slave)
    assert capsys.readouterr().out == "Note: Note: "


def test_a_ctrl_c_the_process_was_started_ignoring_still_stops_the_prompt(terminal, capsys):
    """A command started as a background job of a script (or under nohup) inherits SIGINT ignored, and Python then
    installs no handler: a Ctrl-C at the terminal would be dropped by the kernel. While the prompt reads, it is not;
    afterwards the ignore the process was started with is back."""
    master, slave = terminal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as inherited; the fixture restores Python's handler after
    main = threading.main_thread().native_id
    stopped = threading.Event()

    def ctrl_c_then_rescue() -> None:
        deadline = time.monotonic() + 30
        while not sleeping_in_the_kernel(main) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # to the process, as the terminal sends it
        if not stopped.wait(RESCUE_AFTER):
            os.write(master, b"1\n")

    helper = threading.Thread(target=ctrl_c_then_rescue)
    helper.start()
    got = []
    try:
        with pytest.raises(KeyboardInterrupt):
            got.append(typed("Score (0, 1, 2): ", slave))
            time.sleep(RESCUE_AFTER)
    finally:
        stopped.set()
        helper.join()
    assert got == [] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert capsys.readouterr().out == "Score (0, 1, 2): "
