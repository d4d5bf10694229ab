#!/usr/bin/env python3
"""spec/pty/repl_drive.py KILN_BIN — drives the kiln REPL through a pseudo-terminal as a
user would (typing, Tab, Ctrl-C, Ctrl-D) and checks what it prints. Prints one line per
check ("ok NAME" / "FAIL NAME: ..."), "skip: WHY" and exits 0 when a pty cannot be
opened; exits 1 on any failure. spec/lua/repl_spec.lua runs it."""
import os, re, select, subprocess, sys, tempfile, time

BIN = sys.argv[1]
try:
    import pty
    pid, fd = pty.fork()
except (ImportError, OSError) as e:
    print("skip: no pseudo-terminal here (%s)" % e)
    sys.exit(0)

if pid == 0:
    home = tempfile.mkdtemp()
    os.execve(BIN, [BIN], {"HOME": home, "TERM": "dumb", "PATH": "/usr/bin:/bin", "KILN_DEVICE": "host"})

pending = ""
failures = 0

def read_until(pattern, timeout=20.0):
    """Reads until pattern (a regex over the output since the last match, carriage returns
    dropped) shows; returns that output up to the match's end."""
    global pending
    end = time.time() + timeout
    while True:
        m = re.search(pattern, pending, re.S)
        if m:
            out, pending = pending[:m.end()], pending[m.end():]
            return out
        left = end - time.time()
        if left <= 0:
            raise TimeoutError("waited for %r, got %r" % (pattern, pending[-400:]))
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                raise EOFError("the REPL exited; it printed %r" % pending[-400:])
            pending += chunk.decode("utf-8", "replace").replace("\r", "")

def send(s):
    os.write(fd, s.encode("utf-8"))

def check(name, fn):
    global failures
    try:
        fn()
        print("ok " + name)
    except Exception as e:  # noqa: BLE001 — every failure is reported, the rest still run
        failures += 1
        print("FAIL %s: %s" % (name, e))

def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)

readline = b"readline" in subprocess.run(["ldd", BIN], capture_output=True).stdout

read_until(r"Ctrl-D exits\n")
read_until(r"kiln> ")

def raw_strings():
    send('"a\\tb\\nc"\r')
    out = read_until(r"kiln> ")
    expect("a\tb\nc\n" in out and '"' not in out.split("\n", 1)[1], "strings print raw: %r" % out)

def eq_expr():
    send("=6*7\r")
    out = read_until(r"kiln> ")
    expect("\n42\n" in out, "=expr prints: %r" % out)

def pretty_tables():
    send("{1, 'x', k = {2}}\r")
    out = read_until(r"kiln> ")
    expect('{1, "x", k = {2}}' in out, "tables print pretty: %r" % out)
    send("kiln.zeros({2}, 'f32')\r")
    out = read_until(r"kiln> ")
    expect("table: 0x" not in out and "userdata: 0x" not in out and "f32" in out, "tensors print pretty: %r" % out)

def completion():
    send("kiln.default_pi\t")
    read_until(r"kiln\.default_pipeline")
    send("()\r")
    out = read_until(r"kiln> ")
    expect("reduce-split" in out, "kiln.default_pipeline completed and ran: %r" % out)
    send("stri\t")
    read_until(r"string")
    send(".rep('ab', 2)\r")
    out = read_until(r"kiln> ")
    expect("abab" in out, "global completed: %r" % out)
    send("g = kiln.graph('t')\r")
    read_until(r"kiln> ")
    send("string.f\t")          # two matches, no common prefix to add: the second Tab lists them
    time.sleep(0.2)
    send("\t")
    out = read_until(r"string\.format")
    expect("string.find" in out, "fields listed: %r" % out)
    send("\x03")
    read_until(r"kiln> ")
    send("g:para\t")           # methods of the value before ':'
    read_until(r"g:para\x07?m")
    time.sleep(0.2)
    send("('x', {3}, 'f32').shape[1]\r")
    out = read_until(r"kiln> ")
    expect("\n3\n" in out, "method completed and ran: %r" % out)

def ctrl_c_prompt():
    send("this line is dropped")
    time.sleep(0.3)
    send("\x03")
    time.sleep(0.3)
    send("=1+1\r")
    out = read_until(r"\n2\n.*kiln> ")
    expect("stdin:" not in out and "dropped" not in out.rsplit("\n", 3)[-3], "line cleared: %r" % out)

def ctrl_c_run():
    send("n = 0; while true do n = n + 1 end\r")
    time.sleep(1.0)
    send("\x03")
    out = read_until(r"kiln> ")
    expect("interrupted!" in out, "the run was interrupted: %r" % out)
    send("=n > 0, kiln.compile ~= nil\r")
    out = read_until(r"kiln> ")
    expect("true\ttrue" in out, "state usable after the interrupt: %r" % out)

check("raw strings", raw_strings)
check("=expr", eq_expr)
check("pretty tables and tensors", pretty_tables)
if readline:
    check("tab completion", completion)
    check("Ctrl-C at the prompt", ctrl_c_prompt)
else:
    print("skip: built without readline: no completion, Ctrl-C at the prompt untested")
check("Ctrl-C during a run", ctrl_c_run)

def ctrl_d():
    send("\x04")
    _, status = os.waitpid(pid, 0)
    expect(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "Ctrl-D exits 0 (status %r)" % status)
check("Ctrl-D exits", ctrl_d)
sys.exit(1 if failures else 0)
