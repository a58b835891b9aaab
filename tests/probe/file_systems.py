"""The file-system cases of tests/unix_sockets.rs (issue 55, item 1).

host-folder MNT   a folder of MNT (XFS, 8 TiB) whose files get inode
                  numbers above 2^32, with a few files in it first (so the
                  host socket's low bits lie above allocation group 0's
                  reserved inodes); prints the host socket's path there
serve PATH        a stream server at PATH (mode 0777), answering HOST
collide MNT HOST  binds sockets of its own in MNT's top folder (group 0)
                  until one has HOST's low 32 bits, then connects to HOST
own DIR...        a socket of its own in each DIR, connected to
"""
import errno
import os
import socket
import sys


def host_folder(mnt):
    for i in range(64):
        d = f"{mnt}/h{i}"
        os.mkdir(d)
        os.chmod(d, 0o777)
        p = f"{d}/probe.sock"
        s = socket.socket(socket.AF_UNIX)
        s.bind(p)
        s.close()
        if os.stat(p).st_ino > 2**32:
            for j in range(6):
                open(f"{d}/f{j}", "w").close()
            print(f"{d}/host.sock")
            return
    sys.exit("no folder with 64-bit inode numbers")


def serve(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    os.chmod(path, 0o777)
    s.listen(8)
    while True:
        c, _ = s.accept()
        try:
            c.sendall(b"HOST")
        except OSError:
            pass
        c.close()


def collide(mnt, host):
    low = os.stat(host).st_ino & 0xFFFFFFFF
    keep = None
    for i in range(3000):
        p = f"{mnt}/s{i}"
        s = socket.socket(socket.AF_UNIX)
        s.bind(p)
        s.listen(1)
        if os.stat(p).st_ino == low:
            keep = s
            print("collided: an own socket with the host socket's low bits", p, low)
            break
        s.close()
    if keep is None:
        print("no collision: the allocation went elsewhere")
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect(host)
        print("host connect: ok", c.recv(8))
    except OSError as e:
        print("host connect:", errno.errorcode[e.errno])


def own(dirs):
    for d in dirs:
        p = f"{d}/own-{os.getpid()}.sock"
        l = socket.socket(socket.AF_UNIX)
        l.bind(p)
        l.listen(1)
        c = socket.socket(socket.AF_UNIX)
        try:
            c.connect(p)
            print(d, "own connect: ok")
        except OSError as e:
            print(d, "own connect:", errno.errorcode[e.errno])
        os.unlink(p)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "host-folder":
        host_folder(sys.argv[2])
    elif what == "serve":
        serve(sys.argv[2])
    elif what == "collide":
        collide(sys.argv[2], sys.argv[3])
    elif what == "own":
        own(sys.argv[2:])
