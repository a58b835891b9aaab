# Datagram socketpairs under the helper (tests/stub_policy.rs): each line
# `name=value`. argv[1]: a datagram socket outside the run to aim at.
import ctypes, fcntl, os, signal, socket, sys

outside = sys.argv[1]
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
a.send(b"one")
a.send(b"two")
print("recv=%s,%s" % (b.recv(10).decode(), b.recv(10).decode()), flush=True)
print("type=%d" % a.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE), flush=True)
# An addressed send: to the other end only, or refused; never outside.
try:
    a.sendto(b"escaped", outside)
    b.setblocking(False)
    try:
        print("sendto=ok:%s" % b.recv(20).decode(), flush=True)
    except BlockingIOError:
        print("sendto=ok:lost", flush=True)
except OSError as e:
    print("sendto=errno:%d" % e.errno, flush=True)
# The flags a pair is asked with.
c, d = socket.socketpair(
    socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC
)
nonblock = fcntl.fcntl(c.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK != 0
cloexec = fcntl.fcntl(c.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC != 0
# Python asks for close-on-exec itself: the C library's call does not.
libc = ctypes.CDLL(None, use_errno=True)
sv = (ctypes.c_int * 2)()
assert libc.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM, 0, sv) == 0, ctypes.get_errno()
plain = fcntl.fcntl(sv[0], fcntl.F_GETFD)
print("flags=%s,%s,%s" % (nonblock, cloexec, plain & fcntl.FD_CLOEXEC != 0), flush=True)
# After the other end closes.
b.close()
a.setblocking(False)
try:
    print("eof=%r" % a.recv(10), flush=True)
except OSError as e:
    print("eof=errno:%d" % e.errno, flush=True)
try:
    a.send(b"x")
    print("send-closed=ok", flush=True)
except OSError as e:
    print("send-closed=errno:%d" % e.errno, flush=True)
# The same with SIGPIPE's default action, as a C program has it.
g, h = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
h.close()
child = os.fork()
if child == 0:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        g.send(b"x")
    except OSError:
        pass
    os._exit(0)
_, status = os.waitpid(child, 0)
print(
    "sigpipe=%s"
    % ("signal:%d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else "none"),
    flush=True,
)
# A datagram socket of its own.
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    print("dgram-socket=ok", flush=True)
except OSError as e:
    print("dgram-socket=errno:%d" % e.errno, flush=True)
