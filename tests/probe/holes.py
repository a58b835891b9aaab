# The stub's holes a review found (issue 67), each tried as a command
# would: one line `name=ok` or `name=errno:N` per try
# (tests/stub_policy.rs).
#
# flood NAME    about 1,200 blocking connects to a listener of its own
#               whose backlog is full, their callers killed in waves;
#               then a datagram socketpair, a bind of its stdout (a
#               socket made outside) to the abstract name NAME, and a
#               bind of a socket of its own
# protect       socketpair(AF_UNIX, SOCK_DGRAM) into a read-only page and
#               into a PROT_NONE page: EFAULT and the page unchanged, and
#               no descriptor left behind
# churn N       N landlock_restrict_self calls and N
#               prctl(PR_SET_CHILD_SUBREAPER), then `churned` and waits
#               for its standard input to close
# swap NAME     binds a TCP socket's number in a loop while another thread
#               puts its stdout (a socket made outside) at that number and
#               the abstract address NAME in the address, and back: the
#               kernel reads both again for a bind let go on
# decoy NAME    binds the abstract NAME itself, then connects its fd 3 (an
#               unconnected socket made outside: probe.c's loose-unix) to
#               NAME: `decoy=` what it read, or the errno
# restart       a blocking connect to a full listener, a handled signal
#               (SA_RESTART) while it waits, room made later: the
#               restarted connect waits again and connects
import ctypes
import errno
import os
import signal
import socket
import struct
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)


def said(name, fn):
    try:
        fn()
        print(name + "=ok", flush=True)
    except OSError as e:
        print("%s=errno:%d" % (name, e.errno), flush=True)


def flood(name):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    addr = srv.getsockname()
    first = socket.create_connection(addr)  # the backlog's one place
    for wave in range(4):
        kids = []
        for i in range(300):
            pid = os.fork()
            if pid == 0:
                c = socket.socket()
                try:
                    c.connect(addr)
                except OSError:
                    pass
                os._exit(0)
            kids.append(pid)
        time.sleep(1.5)
        for pid in kids:
            os.kill(pid, signal.SIGKILL)
        for pid in kids:
            os.waitpid(pid, 0)
    said("pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
    out = socket.socket(fileno=os.dup(1))
    said("bind-stdout", lambda: out.bind(b"\0" + name.encode()))
    own = socket.socket(socket.AF_UNIX)
    said("own-bind", lambda: own.bind(b"\0" + name.encode() + b"-own"))
    # Alive until the caller has looked for NAME in its own namespace.
    sys.stdin.read()
    first.close()


def protect():
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    nr = {"x86_64": 53, "aarch64": 199}[os.uname().machine]
    for name, prot in [("read-only", 1), ("no-access", 0)]:
        page = libc.mmap(None, 4096, 3, 0x22, -1, 0)
        ctypes.memmove(page, b"MARKMARK", 8)
        assert libc.mprotect(page, 4096, prot) == 0
        before = len(os.listdir("/proc/self/fd"))
        r = libc.syscall(nr, 1, 2, 0, ctypes.c_void_p(page))
        e = ctypes.get_errno()
        after = len(os.listdir("/proc/self/fd"))
        libc.mprotect(page, 4096, 3)
        kept = ctypes.string_at(page, 8) == b"MARKMARK"
        print("%s=%s" % (name, "ok" if r == 0 else "errno:%d" % e), flush=True)
        print("%s-page=%s" % (name, "kept" if kept else "written"), flush=True)
        print("%s-fds=%d" % (name, after - before), flush=True)


def churn(n):
    attr = ctypes.create_string_buffer(struct.pack("QQQ", 1, 0, 0))  # EXECUTE
    ruleset = libc.syscall(444, attr, 24, 0)
    assert ruleset >= 0, ctypes.get_errno()
    assert libc.prctl(38, 1, 0, 0, 0) == 0
    for _ in range(n):
        libc.syscall(446, ruleset, 0)
    for _ in range(n):
        libc.prctl(36, 1, 0, 0, 0)
    print("churned", flush=True)
    sys.stdin.read()


def swap(name):
    import threading

    n = 100
    tcp = socket.socket()
    os.dup2(tcp.fileno(), n)
    un = struct.pack("=H", socket.AF_UNIX) + b"\0" + name.encode()
    inet = struct.pack("=H", socket.AF_INET) + struct.pack("!H", 0)
    inet += socket.inet_aton("127.0.0.1") + b"\0" * (len(un) - 8)
    buf = ctypes.create_string_buffer(len(un))
    stop = []

    def flip():
        while not stop:
            os.dup2(1, n)
            ctypes.memmove(buf, un, len(un))
            os.dup2(tcp.fileno(), n)
            ctypes.memmove(buf, inet, len(inet))

    t = threading.Thread(target=flip)
    t.start()
    for _ in range(int(os.environ.get("SWAPS", "20000"))):
        libc.bind(n, buf, len(un))
    stop.append(1)
    t.join()
    print("swapped=done", flush=True)
    sys.stdin.read()


def decoy(name):
    own = socket.socket(socket.AF_UNIX)
    own.bind(b"\0" + name.encode())
    own.listen(1)
    loose = socket.socket(fileno=3)
    try:
        loose.connect(b"\0" + name.encode())
        loose.settimeout(2)
        print("decoy=" + (loose.recv(8).decode() or "nothing"), flush=True)
    except OSError as e:
        print("decoy=errno:%d" % e.errno, flush=True)


def restart():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    addr = srv.getsockname()
    first = socket.create_connection(addr)  # the backlog's one place
    maker = os.fork()
    if maker == 0:
        time.sleep(0.6)
        srv.accept()
        time.sleep(5)
        os._exit(0)
    signal.signal(signal.SIGALRM, lambda *_: None)
    signal.siginterrupt(signal.SIGALRM, False)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    c = socket.socket()
    sin = struct.pack("!HH4s8x", socket.AF_INET, addr[1], socket.inet_aton(addr[0]))
    sin = struct.pack("=H", socket.AF_INET) + sin[2:]
    r = libc.connect(c.fileno(), sin, len(sin))
    print("restarted=%s" % ("ok" if r == 0 else "errno:%d" % ctypes.get_errno()), flush=True)
    os.kill(maker, signal.SIGKILL)
    os.waitpid(maker, 0)
    first.close()


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "flood":
        flood(sys.argv[2])
    elif what == "protect":
        protect()
    elif what == "churn":
        churn(int(sys.argv[2]))
    elif what == "swap":
        swap(sys.argv[2])
    elif what == "decoy":
        decoy(sys.argv[2])
    elif what == "restart":
        restart()
