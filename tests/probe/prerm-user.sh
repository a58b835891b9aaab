#!/bin/sh
# Stands in for /usr/bin/apply-seccomp under pkg/debian/prerm
# (tests/setup.rs): run as the user, as prerm runs each user's undo, it
# says what of root's it could reach: a terminal among its descriptors,
# among its parents' (as a same-uid process that ptraces them could), or
# /dev/tty; its session; descriptor 7, which the test opened for root;
# and it prints an escape sequence root's terminal must never see. With a
# file `stop` in its home it stops its parent and itself instead (SIGSTOP,
# as any process of the user could), and prerm must end regardless.
if [ -e "$HOME/stop" ]; then
    kill -STOP "$PPID"
    kill -STOP $$
fi
python3 - <<'PY'
import os
reached = [str(fd) for fd in range(0, 64) if os.path.exists("/proc/self/fd/%d" % fd) and os.isatty(fd)]
pid = os.getppid()
while pid > 1:
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                t = os.open("/proc/%d/fd/%s" % (pid, fd), os.O_RDWR | os.O_NOCTTY)
                if os.isatty(t):
                    reached.append("%d/%s" % (pid, fd))
                os.close(t)
            except OSError:
                pass
        pid = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        break
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    reached.append("/dev/tty")
except OSError:
    pass
print("terminal=" + (",".join(reached) or "none"))
print("sid=%d" % os.getsid(0))
print("fd7=" + ("open" if os.path.exists("/proc/self/fd/7") else "closed"))
PY
printf 'escape=\033[2J\033]0;owned\007done\n'
