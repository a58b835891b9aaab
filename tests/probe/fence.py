# A process that fences itself with Landlock (no TCP connect), as a test
# runner or a nested sandbox would, and the processes around it: each
# line `name=ok` or `name=errno:N` (tests/stub_policy.rs).
import ctypes, os, select, socket, struct, sys, time

libc = ctypes.CDLL(None, use_errno=True)
abi = libc.syscall(444, None, 0, 1)
print("abi=%d" % abi, flush=True)
if abi < 4:
    sys.exit(0)

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(64)
port = srv.getsockname()[1]
own = socket.socket(socket.AF_UNIX)
own.bind("\0fence-%d" % os.getpid())
own.listen(8)


def connect(family, addr):
    s = socket.socket(family)
    try:
        s.connect(addr)
        return "ok"
    except OSError as e:
        return "errno:%d" % e.errno
    finally:
        s.close()


def tcp():
    return connect(socket.AF_INET, ("127.0.0.1", port))


print("before=" + tcp(), flush=True)
r, w = os.pipe()
sibling = os.fork()
if sibling == 0:
    os.read(r, 1)
    print("sibling=" + tcp(), flush=True)
    os._exit(0)

# The stub tells processes started before the fence by their start time,
# in 10 ms ticks: one started in the fence's tick is taken for fenced.
time.sleep(0.05)
attr = ctypes.create_string_buffer(struct.pack("QQQ", 0, 2, 0))  # CONNECT_TCP
ruleset = libc.syscall(444, attr, 24, 0)
assert ruleset >= 0, ctypes.get_errno()
assert libc.prctl(38, 1, 0, 0, 0) == 0
assert libc.syscall(446, ruleset, 0) == 0, ctypes.get_errno()

print("after=" + tcp(), flush=True)
# A child made with CLONE_PARENT keeps the fence but names this process's
# parent as its own (issue 67, item 3). A raw clone with no new stack
# goes on as a fork does.
CLONE_PARENT, SIGCHLD = 0x8000, 17
clone = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
sin = struct.pack("=H", socket.AF_INET) + struct.pack("!H", port)
sin += socket.inet_aton("127.0.0.1") + b"\0" * 8
kid = libc.syscall(clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0)
if kid == 0:
    # Raw calls only: the child of a raw clone has none of Python's
    # after-fork care.
    s = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    r = libc.connect(s, sin, len(sin))
    said = b"ok" if r == 0 else b"errno:%d" % ctypes.get_errno()
    os.write(1, b"clone-parent=" + said + b"\n")
    os._exit(0)
if kid < 0:
    print("clone-parent=errno:%d" % ctypes.get_errno(), flush=True)
print("unix-after=" + connect(socket.AF_UNIX, "\0fence-%d" % os.getpid()), flush=True)
os.write(w, b"x")
os.waitpid(sibling, 0)
child = os.fork()
if child == 0:
    print("child=" + tcp(), flush=True)
    os._exit(0)
os.waitpid(child, 0)
# A grandchild left when its parent ends: its parent is then whoever
# takes orphans.
r2, w2 = os.pipe()
r3, w3 = os.pipe()
parent = os.fork()
if parent == 0:
    first = os.getpid()
    if os.fork() == 0:
        os.read(r2, 1)
        while os.getppid() == first:
            time.sleep(0.01)
        print("orphan=" + tcp(), flush=True)
        os.write(w3, b"o")
        os._exit(0)
    os._exit(0)
os.waitpid(parent, 0)
os.write(w2, b"x")
# A process started later, not under the fence: the shell's, told the
# port through this file.
if len(sys.argv) > 1:
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(port))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
# Alive until the orphan has tried and the connects that are made have
# arrived (before, sibling, and the later one), at most 10 s each: under
# the helper, the run ends when its command does.
select.select([r3], [], [], 10)
srv.settimeout(10)
for _ in range(3 if len(sys.argv) > 1 else 2):
    try:
        srv.accept()[0].close()
    except OSError:
        break
