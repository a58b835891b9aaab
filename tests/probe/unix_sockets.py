"""What a command inside the helper can reach over Unix sockets
(tests/unix_sockets.rs). Prints one `case: result` line each; a result is
the reply of the server reached (`own` or `outside`) or the errno's name.

argv: DIR (writable, shared with the test), OUTSIDE (a path an outside
server listens at), ABSTRACT (an outside server's abstract name)."""
import ctypes, errno, os, select, socket, sys, threading, time

d, outside, abstract = sys.argv[1], sys.argv[2], sys.argv[3]


def reply(target):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(5)
    try:
        c.connect(target)
        return c.recv(16).decode() or "empty"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    finally:
        c.close()


def serve(target):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(target)
    s.listen(64)

    def loop():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            c.sendall(b"own")
            c.close()

    threading.Thread(target=loop, daemon=True).start()
    return s


def say(case, result):
    print(f"{case}: {result}", flush=True)


own = os.path.join(d, "own.sock")
serve(own)
say("own path", reply(own))
say("own relative", (os.chdir(d), reply("own.sock"))[1])
serve("\0own-" + str(os.getpid()))
say("own abstract", reply("\0own-" + str(os.getpid())))
# From another thread (the kernel names the thread, not the process).
got = []
t = threading.Thread(target=lambda: got.append(reply(own)))
t.start()
t.join()
say("own from a thread", got[0])

# A full backlog: blocking connects wait for room, as in the kernel; a
# non-blocking one gets EAGAIN.
full = os.path.join(d, "full.sock")
f = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
f.bind(full)
f.listen(0)
waited = []


def blocked():
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        c.connect(full)
        waited.append("ok")
    except OSError as e:
        waited.append(errno.errorcode.get(e.errno))


ts = [threading.Thread(target=blocked) for _ in range(4)]
for t in ts:
    t.start()
time.sleep(0.3)
n = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
n.setblocking(False)
try:
    n.connect(full)
    say("full, non-blocking", "ok")
except OSError as e:
    say("full, non-blocking", errno.errorcode.get(e.errno))
f.settimeout(5)
# One accept for each blocked connect (a fifth waited out its 5 s).
for _ in range(len(ts)):
    try:
        f.accept()
    except OSError:
        break
for t in ts:
    t.join(5)
say("full, blocking", " ".join(sorted(waited)))

say("outside path", reply(outside))
say("outside symlink", reply(os.path.join(d, "link.sock")))
say("outside hard link", reply(os.path.join(d, "hard.sock")))
say("outside abstract", reply("\0" + abstract))
fd = os.open(outside, os.O_PATH)
say("outside through /proc/self/fd", reply(f"/proc/self/fd/{fd}"))
say("outside through /proc/PID/fd", reply(f"/proc/{os.getpid()}/fd/{fd}"))
say("missing", reply(os.path.join(d, "missing.sock")))

# Ours closed and removed, then an outside server at the same path.
again = os.path.join(d, "again.sock")
s = serve(again)
say("again, ours", reply(again))
s.close()
os.unlink(again)
open(os.path.join(d, "again.ready"), "w").close()
for _ in range(500):
    if os.path.exists(os.path.join(d, "again.go")):
        break
    time.sleep(0.01)
say("again, outside at the same path", reply(again))

# A thread rewrites the address while connects are decided: no connect
# may reach the outside server. Both paths have one length.
flip_own = os.path.join(d, "f1.sock")
flip_out = os.path.join(d, "f2.sock")
serve(flip_own)
libc = ctypes.CDLL(None, use_errno=True)
a = ctypes.create_string_buffer(110)
a[0:2] = socket.AF_UNIX.to_bytes(2, sys.byteorder)
paths = [flip_own.encode() + b"\0", flip_out.encode() + b"\0"]
a[2 : 2 + len(paths[0])] = paths[0]
stop = False
flips = [0]


def flip():
    while not stop:
        a[2 : 2 + len(paths[0])] = paths[flips[0] & 1]
        flips[0] += 1


t = threading.Thread(target=flip)
t.start()
seen = {}
for _ in range(int(os.environ.get("FLIPS", "1000"))):
    # The rewriting thread runs meanwhile (a loaded machine could leave it
    # waiting, the address at one path for every connect).
    was = flips[0]
    while flips[0] == was:
        time.sleep(0)
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if libc.connect(c.fileno(), a, 110) == 0:
        c.settimeout(5)
        r = c.recv(16).decode() or "empty"
    else:
        r = errno.errorcode.get(ctypes.get_errno(), "?")
    seen[r] = seen.get(r, 0) + 1
    c.close()
stop = True
t.join()
say("rewritten address", " ".join(f"{k}={v}" for k, v in sorted(seen.items())))

t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    t.connect(("127.0.0.1", 9))
    say("tcp", "connected")
except OSError as e:
    say("tcp", errno.errorcode.get(e.errno))
# A TCP listener of the command's own: a blocking connect (the stub's
# second connect or its poll finishes the handshake) and a non-blocking
# one (EINPROGRESS, then writable), each carrying a byte.
ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.bind(("127.0.0.1", 0))
ls.listen(4)
for name, blocking in (("tcp own", True), ("tcp own, non-blocking", False)):
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.setblocking(blocking)
    r = c.connect_ex(ls.getsockname())
    if r == errno.EINPROGRESS:
        select.select([], [c], [], 5)
        r = c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        first = "EINPROGRESS "
    else:
        first = ""
    if r == 0:
        d, _ = ls.accept()
        d.sendall(b"x")
        c.setblocking(True)
        c.settimeout(5)
        say(name, first + ("connected" if c.recv(1) == b"x" else "no byte"))
        d.close()
    else:
        say(name, first + errno.errorcode.get(r, "?"))
    c.close()
ls.close()
for kind, name in ((socket.SOCK_DGRAM, "dgram"), (socket.SOCK_STREAM, "stream")):
    try:
        socket.socket(socket.AF_UNIX, kind).close()
        say(f"socket {name}", "made")
    except OSError as e:
        say(f"socket {name}", errno.errorcode.get(e.errno))
