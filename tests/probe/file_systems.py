"""The file-system cases of tests/unix_sockets.rs (issue 55, item 1;
issue 67, items 1 and 2).

host-folder MNT   a folder of MNT (XFS, 8 TiB) whose files get inode
                  numbers above 2^32, with a few files in it first (so the
                  host socket's low bits lie above allocation group 0's
                  reserved inodes); prints the host socket's path there
host-top DIR      a few files in DIR, then prints the host socket's path
                  there (XFS's group 0: a number below 2^32; btrfs: a
                  subvolume's own small numbers)
serve PATH        a stream server at PATH (mode 0777), answering HOST
collide MNT HOST  binds sockets of its own in MNT's top folder (group 0)
                  until one has HOST's low 32 bits, then connects to HOST
collide-high MNT HOST
                  makes folders in MNT until their files get numbers above
                  2^32, binds sockets there until one has HOST's (small)
                  number in its low 32 bits, then connects to HOST
collide-next DIR HOST
                  makes files in DIR (btrfs: numbered one after another in
                  each subvolume) until the next number is HOST's, binds a
                  socket there, then connects to HOST
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


def host_top(d):
    for j in range(6):
        open(f"{d}/f{j}", "w").close()
    print(f"{d}/host.sock")


def try_host(host):
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect(host)
        print("host connect: ok", c.recv(8))
    except OSError as e:
        print("host connect:", errno.errorcode[e.errno])


def collide_high(mnt, host):
    target = os.stat(host).st_ino
    low = target & 0xFFFFFFFF
    for i in range(64):
        d = f"{mnt}/c{os.getpid()}-{os.urandom(4).hex()}-{i}"
        os.mkdir(d)
        kept = []
        for j in range(600):
            p = f"{d}/s{j}"
            s = socket.socket(socket.AF_UNIX)
            s.bind(p)
            ino = os.stat(p).st_ino
            if ino < 2**32:
                break
            if ino & 0xFFFFFFFF == low and ino != target:
                s.listen(1)
                kept.append(s)
                print("collided: an own socket above 2^32 with the host socket's number", p, ino)
                try_host(host)
                return
            s.close()
    print("no collision: the allocation went elsewhere")


def collide_next(d, host):
    target = os.stat(host).st_ino
    for i in range(100000):
        p = f"{d}/n{os.getpid()}-{i}"
        open(p, "w").close()
        ino = os.stat(p).st_ino
        if ino + 1 == target:
            break
        if ino >= target:
            print("no collision: past the host socket's number", ino, target)
            return
    p = f"{d}/own.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(p)
    s.listen(1)
    if os.stat(p).st_ino != target:
        print("no collision: the number went elsewhere")
        return
    print("collided: an own socket with the host socket's number in another subvolume", target)
    try_host(host)


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
    try_host(host)


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
    elif what == "host-top":
        host_top(sys.argv[2])
    elif what == "collide":
        collide(sys.argv[2], sys.argv[3])
    elif what == "collide-high":
        collide_high(sys.argv[2], sys.argv[3])
    elif what == "collide-next":
        collide_next(sys.argv[2], sys.argv[3])
    elif what == "own":
        own(sys.argv[2:])
