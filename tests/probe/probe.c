/* Probe run INSIDE the helper by the end-to-end tests.
 *
 * Each argument names one check; the probe prints `name=result` per line:
 *   ok             the call worked (sockets: SO_DOMAIN confirmed)
 *   errno:NAME     the call failed with that errno
 *   signal:N       the call was made in a forked child, which died by N
 *   returned:R     a kill case whose call returned instead
 *
 * Refused calls pass arguments the kernel itself rejects (bad fd, bad
 * pointer, invalid flag bits), so EPERM can only come from the filter and
 * an unfiltered run shows the kernel's own errno.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/xattr.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *errname(int e) {
  switch (e) {
  case EPERM: return "EPERM";
  case ENOTTY: return "ENOTTY";
  case ENOSYS: return "ENOSYS";
  case EINVAL: return "EINVAL";
  case EBADF: return "EBADF";
  case EFAULT: return "EFAULT";
  case EACCES: return "EACCES";
  case ENOENT: return "ENOENT";
  case ESRCH: return "ESRCH";
  case EAFNOSUPPORT: return "EAFNOSUPPORT";
  case EOPNOTSUPP: return "EOPNOTSUPP";
  case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
  case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
  case ECONNREFUSED: return "ECONNREFUSED";
  case EROFS: return "EROFS";
  default: return "OTHER";
  }
}

static void result(const char *name, long ret, int err) {
  if (ret < 0)
    printf("%s=errno:%s\n", name, errname(err));
  else
    printf("%s=ok\n", name);
}

/* A raw socket() call; on success the domain is confirmed with SO_DOMAIN. */
static void sock(const char *name, unsigned long domain, int type, int proto,
                 int want_domain) {
  long fd = syscall(SYS_socket, domain, type, proto);
  int err = errno;
  if (fd >= 0) {
    int d = -1;
    socklen_t len = sizeof d;
    if (getsockopt((int)fd, SOL_SOCKET, SO_DOMAIN, &d, &len) != 0 || d != want_domain) {
      printf("%s=wrong-domain:%d\n", name, d);
      close((int)fd);
      return;
    }
    close((int)fd);
  }
  result(name, fd, err);
}

static void pair(const char *name, unsigned long domain, int type) {
  int sv[2];
  long r = syscall(SYS_socketpair, domain, type, 0, sv);
  int err = errno;
  if (r == 0) {
    int d = -1;
    socklen_t len = sizeof d;
    getsockopt(sv[0], SOL_SOCKET, SO_DOMAIN, &d, &len);
    close(sv[0]);
    close(sv[1]);
    if (d != AF_UNIX) {
      printf("%s=wrong-domain:%d\n", name, d);
      return;
    }
  }
  result(name, r, err);
}

static void raw(const char *name, long nr, long a, long b, long c, long d,
                long e) {
  long r = syscall(nr, a, b, c, d, e, 0L);
  result(name, r, errno);
}

/* Writes the observer used to miss, in `dir`: xattrs by path, by link
 * and by a read-only fd, fchmod and fchown through a read-only fd,
 * futimesat (x86_64), and bind() of a Unix socket (one end of an allowed
 * stream pair) to a path. One line each: name=ok or name=errno:E. */
static void unobserved_writes(const char *dir) {
  char f[4096], s[4096];
  snprintf(f, sizeof f, "%s/attrs", dir);
  snprintf(s, sizeof s, "%s/bound.sock", dir);
  int fd = open(f, O_RDONLY);
  result("setxattr", setxattr(f, "user.a", "1", 1, 0), errno);
  result("lsetxattr", lsetxattr(f, "user.b", "1", 1, 0), errno);
  result("fsetxattr", fsetxattr(fd, "user.c", "1", 1, 0), errno);
  result("removexattr", removexattr(f, "user.a"), errno);
  result("lremovexattr", lremovexattr(f, "user.b"), errno);
  result("fremovexattr", fremovexattr(fd, "user.c"), errno);
  result("fchmod", fchmod(fd, 0640), errno);
  result("fchown", fchown(fd, (uid_t)-1, (gid_t)-1), errno);
#if defined(__x86_64__)
  result("futimesat", syscall(SYS_futimesat, AT_FDCWD, f, NULL), errno);
#endif
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", s);
    result("bind-unix", bind(pair[0], (struct sockaddr *)&a, sizeof a), errno);
    struct sockaddr_un abstract = {.sun_family = AF_UNIX};
    memcpy(abstract.sun_path, "\0probe-abstract", 15);
    result("bind-abstract", bind(pair[1], (struct sockaddr *)&abstract,
                                 offsetof(struct sockaddr_un, sun_path) + 15), errno);
    /* A path followed by a decoy past addrlen: the kernel reads addrlen
     * bytes and makes real.sock; the report must name that, not the
     * string that runs on to its NUL. */
    int decoy[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, decoy) == 0) {
      struct sockaddr_un d = {.sun_family = AF_UNIX};
      int n = snprintf(d.sun_path, sizeof d.sun_path, "%s/real.sock", dir);
      snprintf(d.sun_path + n, sizeof d.sun_path - n, "-decoy-name");
      result("bind-decoy", bind(decoy[0], (struct sockaddr *)&d,
                                offsetof(struct sockaddr_un, sun_path) + n), errno);
    }
  } else {
    result("bind-unix", -1, errno);
  }
}

/* TIOCSTI for real: pushes "\n" into the input of the terminal on the
 * first of fds 0-2 that is one, as if typed there. ENOTTY: none is. */
static void type_into_terminal(const char *name) {
  for (int fd = 0; fd < 3; fd++) {
    if (isatty(fd)) {
      char c = '\n';
      long r = ioctl(fd, TIOCSTI, &c);
      result(name, r, errno);
      return;
    }
  }
  result(name, -1, ENOTTY);
}

/* Execs `path` in a forked child; reports how the child ended:
 * signal:N, or exit:N. (A 32-bit ARM program under the filters of an
 * aarch64 helper: its first system call is another architecture's.) */
static void exec_child(const char *name, const char *path) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execl(path, path, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFSIGNALED(st))
    printf("%s=signal:%d\n", name, WTERMSIG(st));
  else
    printf("%s=exit:%d\n", name, WEXITSTATUS(st));
}

#if defined(__x86_64__)
/* Runs `fn` in a forked child; reports how the child ended. */
static void in_child(const char *name, long (*fn)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    printf("%s=errno:%s\n", name, errname(errno));
    return;
  }
  if (pid == 0) {
    long r = fn();
    printf("%s=returned:%ld/%s\n", name, r, r < 0 ? errname(errno) : "-");
    fflush(stdout);
    _exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  if (WIFSIGNALED(st))
    printf("%s=signal:%d\n", name, WTERMSIG(st));
}

static long x32_getpid(void) { return syscall(0x40000000L | SYS_getpid); }
static long x32_socket(void) { return syscall(0x40000000L | 41, AF_INET, SOCK_STREAM, 0); }
static long i386_call(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
  if (ret < 0 && ret > -4096) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}
static long i386_socket(void) { return i386_call(359, AF_UNIX, SOCK_STREAM, 0); }
static long i386_socketcall(void) { return i386_call(102, 1 /* SYS_SOCKET */, 0, 0); }
static long i386_getpid(void) { return i386_call(20, 0, 0, 0); }
#endif

static void *thread_fn(void *arg) { return arg; }

/* Row 14: a permissive filter of the command's own, stacked on top. */
static void stack_allow(const char *name) {
  struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog prog = {.len = 1, .filter = &allow};
  long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
  result(name, r, errno);
}

/* Row 16: every process in /proc other than this one, as "pid:RESULT",
 * comma-separated. `what` picks the attempt:
 *   'm'  open /proc/PID/mem: "open", or the errno
 *   'k'  kill(PID, 0): "ok", or the errno
 *   'p'  PTRACE_SEIZE (stops nothing; detached at once): "ok", or the errno
 * Numbers are the /proc instance's, so 'k' and 'p' mean something only
 * where that instance is this process's own PID namespace's or an
 * ancestor's as seen from it (the capability-free way, without a PID
 * namespace of its own). */
static void foreign_with(const char *name, char what) {
  DIR *d = opendir("/proc");
  if (!d) {
    printf("%s=errno:%s\n", name, errname(errno));
    return;
  }
  /* This process as the /proc instance numbers it (which may be another
   * PID namespace's than getpid()'s). */
  char self[32] = "";
  ssize_t len = readlink("/proc/self", self, sizeof self - 1);
  self[len > 0 ? len : 0] = 0;
  printf("%s=", name);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || !strcmp(e->d_name, self))
      continue;
    const char *res;
    if (what == 'm') {
      char path[300];
      snprintf(path, sizeof path, "/proc/%s/mem", e->d_name);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      res = fd >= 0 ? "open" : errname(errno);
      if (fd >= 0) close(fd);
    } else if (what == 'k') {
      res = kill(atoi(e->d_name), 0) == 0 ? "ok" : errname(errno);
    } else {
      pid_t pid = atoi(e->d_name);
      if (ptrace(PTRACE_SEIZE, pid, 0, 0) == 0) {
        res = "ok";
        ptrace(PTRACE_DETACH, pid, 0, 0);
      } else {
        res = errname(errno);
      }
    }
    printf("%s%s:%s", n++ ? "," : "", e->d_name, res);
  }
  closedir(d);
  printf("%s\n", n ? "" : "none");
}

/* Connects the inherited, unbound AF_UNIX socket on fd 3 (see
 * with-abstract) to the abstract address `addr`. */
static void abstract_connect(const char *name, const char *addr) {
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  size_t len = strlen(addr);
  memcpy(sun.sun_path + 1, addr, len);
  long r = connect(3, (struct sockaddr *)&sun, offsetof(struct sockaddr_un, sun_path) + 1 + len);
  result(name, r, errno);
}

/* A listener of the command's own and a blocking connect to it, a byte
 * carried back (under the own-sockets policy the stub makes the connect):
 * an abstract Unix name, or TCP on 127.0.0.1. */
static void own_connect(const char *name, int tcp) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  int family = tcp ? AF_INET : AF_UNIX;
  if (tcp) {
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *in;
  } else {
    struct sockaddr_un *un = (struct sockaddr_un *)&ss;
    un->sun_family = AF_UNIX;
    int n = snprintf(un->sun_path + 1, sizeof un->sun_path - 1, "own-connect-%d", (int)getpid());
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
  }
  int l = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0 || bind(l, (struct sockaddr *)&ss, len) || listen(l, 4) ||
      getsockname(l, (struct sockaddr *)&ss, &len)) {
    result(name, -1, errno);
    if (l >= 0) close(l);
    return;
  }
  int c = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  long r = c < 0 ? -1 : connect(c, (struct sockaddr *)&ss, len);
  int err = errno;
  if (r == 0) {
    char b = 'x';
    int d = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (d < 0 || write(d, &b, 1) != 1 || read(c, &b, 1) != 1)
      r = -1, err = errno;
    if (d >= 0) close(d);
  }
  result(name, r, err);
  if (c >= 0) close(c);
  close(l);
}

/* The own-sockets policy where the kernel holds it (issue 55). */

/* A socket of `type` bound at DIR/NAME-PID (mode 0777), or -1. */
static int bound_at(const char *dir, const char *name, int type, struct sockaddr_un *sun, socklen_t *len) {
  memset(sun, 0, sizeof *sun);
  sun->sun_family = AF_UNIX;
  snprintf(sun->sun_path, sizeof sun->sun_path, "%s/%s-%d", dir, name, (int)getpid());
  unlink(sun->sun_path);
  *len = (socklen_t)sizeof *sun;
  int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (s < 0 || bind(s, (struct sockaddr *)sun, *len) || (type != SOCK_DGRAM && listen(s, 4)))
    return -1;
  chmod(sun->sun_path, 0777);
  return s;
}

/* A stream server of the command's own at a path in DIR: a child it
 * forked connects; own-path=ok when a byte goes through, and
 * own-path-peer=ok when SO_PEERCRED names the child (not the stub). */
static void own_path(const char *dir) {
  struct sockaddr_un sun;
  socklen_t len;
  int l = bound_at(dir, "own", SOCK_STREAM, &sun, &len);
  if (l < 0) {
    result("own-path", -1, errno);
    return;
  }
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    char b = 'x';
    _exit(c >= 0 && connect(c, (struct sockaddr *)&sun, len) == 0 && write(c, &b, 1) == 1 ? 0 : errno);
  }
  struct pollfd pfd = {.fd = l, .events = POLLIN};
  int d = poll(&pfd, 1, 10000) == 1 ? accept4(l, NULL, NULL, SOCK_CLOEXEC) : -1;
  struct ucred cred = {0};
  socklen_t clen = sizeof cred;
  char b;
  int got = d >= 0 && read(d, &b, 1) == 1 && !getsockopt(d, SOL_SOCKET, SO_PEERCRED, &cred, &clen);
  int st = 0;
  waitpid(child, &st, 0);
  int err = WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
  result("own-path", got && err == 0 ? 0 : -1, err ? err : errno);
  if (got && cred.pid != child)
    printf("own-path-peer=pid:%d\n", (int)cred.pid);
  else
    result("own-path-peer", got ? 0 : -1, ENOTCONN);
  if (d >= 0) close(d);
  close(l);
  unlink(sun.sun_path);
}

/* A datagram server of the command's own at a path in DIR, and an
 * unbound datagram socket sending to it by address. */
static void own_dgram(const char *dir) {
  struct sockaddr_un sun;
  socklen_t len;
  int srv = bound_at(dir, "dgram", SOCK_DGRAM, &sun, &len);
  if (srv < 0) {
    result("own-dgram", -1, errno);
    return;
  }
  int c = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  char b = 'x';
  long r = c < 0 ? -1 : sendto(c, &b, 1, 0, (struct sockaddr *)&sun, len);
  int err = errno;
  struct pollfd pfd = {.fd = srv, .events = POLLIN};
  if (r == 1 && (poll(&pfd, 1, 5000) != 1 || recv(srv, &b, 1, 0) != 1))
    r = -1, err = errno;
  result("own-dgram", r == 1 ? 0 : -1, err);
  if (c >= 0) close(c);
  close(srv);
  unlink(sun.sun_path);
}

/* A datagram socket sending one byte to PATH by address. */
static void dgram_to(const char *path) {
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  strncpy(sun.sun_path, path, sizeof sun.sun_path - 1);
  int c = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  char b = 'x';
  long r = c < 0 ? -1 : sendto(c, &b, 1, 0, (struct sockaddr *)&sun, sizeof sun);
  result("dgram-to", r == 1 ? 0 : -1, errno);
  if (c >= 0) close(c);
}

/* A datagram socketpair: a byte each way. */
static void dgram_pair(void) {
  int sv[2];
  char b = 'x';
  long r = socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv);
  int err = errno;
  if (r == 0) {
    if (send(sv[0], &b, 1, 0) != 1 || recv(sv[1], &b, 1, 0) != 1 || send(sv[1], &b, 1, 0) != 1 ||
        recv(sv[0], &b, 1, 0) != 1)
      r = -1, err = errno;
    close(sv[0]);
    close(sv[1]);
  }
  result("dgram-pair", r, err);
}

/* struct landlock_ruleset_attr as of ABI 6 (the build host's headers may
 * be older). */
struct ll_ruleset {
  uint64_t handled_access_fs, handled_access_net, scoped;
};
#define LL_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)

/* The command's own Landlock fence: a child restricts itself (abstract
 * Unix sockets scoped; TCP connects handled with no port allowed), then
 * connects to the parent's abstract listener and to its TCP listener,
 * both outside its new domain. Each must fail as the kernel fails it
 * outside this helper: fence-abstract=errno:EPERM, fence-tcp=errno:EACCES. */
static void fence(void) {
  int la = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  int n = snprintf(sun.sun_path + 1, sizeof sun.sun_path - 1, "fence-%d", (int)getpid());
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
  int lt = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t ilen = sizeof in;
  if (la < 0 || bind(la, (struct sockaddr *)&sun, alen) || listen(la, 4) || lt < 0 ||
      bind(lt, (struct sockaddr *)&in, ilen) || listen(lt, 4) ||
      getsockname(lt, (struct sockaddr *)&in, &ilen)) {
    result("fence", -1, errno);
    return;
  }
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    struct ll_ruleset attr = {.handled_access_net = LL_ACCESS_NET_CONNECT_TCP,
                              .scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET};
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (rs < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_landlock_restrict_self, rs, 0)) {
      result("fence", -1, errno);
      _exit(1);
    }
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    long r = connect(c, (struct sockaddr *)&sun, alen);
    result("fence-abstract", r, errno);
    int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    r = connect(t, (struct sockaddr *)&in, ilen);
    result("fence-tcp", r, errno);
    fflush(stdout);
    _exit(0);
  }
  waitpid(child, NULL, 0);
  close(la);
  close(lt);
}

/* THREATS row 24: calls that act on another process by PID, group or
 * user without a ptrace-mode check. Each is a no-op on its target where
 * it works (the target's own values written back, nice 19 on a sleeping
 * test process), and the group and user forms name a group and uid that
 * hold no process, so the kernel answers ESRCH where nothing refuses
 * them. One line each: outside-NAME=ok or =errno:E. */
#define UNUSED_ID 4242999
static void outside_calls(const char *prefix, pid_t pid) {
  char n[64];
  cpu_set_t mask;
  CPU_ZERO(&mask);
  sched_getaffinity(0, sizeof mask, &mask);
  struct sched_param param = {0};
  struct { uint32_t size, policy; uint64_t flags; int32_t nice; uint32_t prio;
           uint64_t runtime, deadline, period; uint32_t util_min, util_max; } attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.nice = 19;
  struct rlimit old;
  long be4 = (2L << 13) | 4; /* IOPRIO_CLASS_BE, level 4 */
#define CALL(name, expr) do { snprintf(n, sizeof n, "%s-%s", prefix, name); \
    errno = 0; long r_ = (expr); result(n, r_, errno); } while (0)
  CALL("setpriority", syscall(SYS_setpriority, PRIO_PROCESS, pid, 19));
  CALL("prlimit", syscall(SYS_prlimit64, pid, RLIMIT_NOFILE, NULL, &old));
  CALL("affinity", syscall(SYS_sched_setaffinity, pid, sizeof mask, &mask));
  CALL("scheduler", syscall(SYS_sched_setscheduler, pid, SCHED_OTHER, &param));
  CALL("param", syscall(SYS_sched_setparam, pid, &param));
  CALL("attr", syscall(SYS_sched_setattr, pid, &attr, 0));
  CALL("ioprio", syscall(SYS_ioprio_set, 1 /* WHO_PROCESS */, pid, be4));
  if (pid != 0) {
    CALL("prio-pgrp", syscall(SYS_setpriority, PRIO_PGRP, UNUSED_ID, 19));
    CALL("prio-user", syscall(SYS_setpriority, PRIO_USER, UNUSED_ID, 19));
    CALL("ioprio-user", syscall(SYS_ioprio_set, 3 /* WHO_USER */, UNUSED_ID, be4));
  }
#undef CALL
}

/* Joins process group `pgid` (the caller's, on the capability-free way
 * a group of the same session), then renices and idles that group. */
static void join_group(pid_t pgid) {
  long r = setpgid(0, pgid);
  result("join-group", r, errno);
  r = setpriority(PRIO_PGRP, 0, 19);
  result("renice-joined", r, errno);
  r = syscall(SYS_ioprio_set, 2 /* WHO_PGRP */, 0, 3L << 13 /* IDLE */);
  result("ioprio-joined", r, errno);
}

/* Writes the procfs knobs of `pid` that have no ptrace-mode check. */
static void procfs_write(pid_t pid) {
  const char *knobs[][2] = {{"oom_score_adj", "1000\n"}, {"autogroup", "19\n"}};
  for (int i = 0; i < 2; i++) {
    char path[64], name[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, knobs[i][0]);
    snprintf(name, sizeof name, "write-%s", knobs[i][0]);
    if (access("/proc/self/autogroup", F_OK) && i == 1) {
      printf("%s=absent\n", name);
      continue;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    long r = fd < 0 ? -1 : write(fd, knobs[i][1], strlen(knobs[i][1]));
    int err = errno;
    result(name, r, err);
    if (fd >= 0) close(fd);
  }
}

/* Makes group `pgid` the terminal's foreground (another job of the
 * caller's), then stops: continued by the user's `fg`, it says so. */
static void front_steal(pid_t pgid) {
  long r = tcsetpgrp(0, pgid);
  result("front-steal", r, errno);
  fflush(stdout);
  kill(getpid(), SIGSTOP);
  printf("continued\n");
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

/* bench ROUNDS @@ CMD... [@@ CMD...]: runs each command once a round, in
 * turns, ROUNDS times (after 10 rounds of warm-up), timing each from fork
 * to reap; prints each command's median in us. For the VM, whose busybox
 * has no clock finer than 10 ms. */
static int bench(int rounds, int argc, char **argv) {
  char **cmds[16];
  int n = 0;
  for (int i = 0; i < argc && n < 16; i++) {
    if (!strcmp(argv[i], "@@")) {
      argv[i] = NULL;
      if (i + 1 < argc)
        cmds[n++] = argv + i + 1;
    }
  }
  if (rounds <= 0 || n == 0)
    return fprintf(stderr, "bench: ROUNDS @@ CMD... [@@ CMD...]\n"), 125;
  long *t = calloc((size_t)rounds * n, sizeof *t);
  for (int r = -10; r < rounds; r++) {
    for (int c = 0; c < n; c++) {
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      pid_t pid = fork();
      if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
        execvp(cmds[c][0], cmds[c]);
        _exit(127);
      }
      int st = 0;
      waitpid(pid, &st, 0);
      clock_gettime(CLOCK_MONOTONIC, &b);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return fprintf(stderr, "bench: %s failed (status %d)\n", cmds[c][0], st), 1;
      if (r >= 0)
        t[(size_t)c * rounds + r] = (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000;
    }
  }
  for (int c = 0; c < n; c++) {
    qsort(t + (size_t)c * rounds, rounds, sizeof *t, cmp_long);
    printf("bench-%d=%ld\n", c, t[(size_t)c * rounds + rounds / 2]);
  }
  return 0;
}

/* observe-collect SOCK CMD...: listens on the Unix socket SOCK, runs CMD
 * with SRT_OBSERVE_SOCK=SOCK, and prints what it sends, a line "obs: ..."
 * each, after CMD's own output; exits with CMD's status. (The guests of
 * vm/run have no socket tool.) */
static int observe_collect(const char *path, char **cmd) {
  int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  strncpy(sun.sun_path, path, sizeof sun.sun_path - 1);
  unlink(path);
  if (l < 0 || bind(l, (struct sockaddr *)&sun, sizeof sun) || listen(l, 1) || chmod(path, 0777))
    return perror("observe-collect: listen"), 125;
  setenv("SRT_OBSERVE_SOCK", path, 1);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    execvp(cmd[0], cmd);
    _exit(127);
  }
  /* At most 30 s for the helper to connect (it does first of all). */
  struct pollfd pfd = {.fd = l, .events = POLLIN};
  int c = poll(&pfd, 1, 30000) == 1 ? accept4(l, NULL, NULL, SOCK_CLOEXEC) : -1;
  static char buf[65536];
  size_t len = 0;
  ssize_t n;
  while (c >= 0 && len < sizeof buf - 1 && (n = read(c, buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)n;
  int st = 0;
  waitpid(pid, &st, 0);
  buf[len] = 0;
  for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
    printf("obs: %s\n", line);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Wrapper modes, before the checks; each ends in an exec of the rest:
 *   with-abstract ADDR CMD...  listen on the abstract address ADDR (fd 4,
 *                              inherited) and leave an unbound AF_UNIX
 *                              stream socket on fd 3 for abstract-connect
 *   deny-unshare CMD...        a seccomp filter answering EPERM to unshare
 *                              and to nothing else (a container-like policy
 *                              on unshare itself)
 * and bench (above). */
static int pair_race(void);

static int wrapper(int argc, char **argv) {
  if (argc > 3 && !strcmp(argv[1], "with-abstract")) {
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t len = strlen(argv[2]);
    memcpy(sun.sun_path + 1, argv[2], len);
    if (l < 0 || bind(l, (struct sockaddr *)&sun, offsetof(struct sockaddr_un, sun_path) + 1 + len) ||
        listen(l, 8) || dup2(l, 4) < 0)
      return perror("with-abstract: listener"), 125;
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (c < 0 || dup2(c, 3) < 0)
      return perror("with-abstract: socket"), 125;
    execvp(argv[3], argv + 3);
    return perror("with-abstract: exec"), 127;
  }
  if (argc > 2 && !strcmp(argv[1], "deny-unshare")) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = 4, .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
      return perror("deny-unshare"), 125;
    execvp(argv[2], argv + 2);
    return perror("deny-unshare: exec"), 127;
  }
  /* What a command tries through its process group: renice it, then
   * SIGTERM it (kill(0)). Only the command's own group may feel either. */
  if (argc > 1 && !strcmp(argv[1], "group-attack")) {
    int r = setpriority(PRIO_PGRP, 0, 7), e = errno;
    result("renice-group", r, e);
    fflush(stdout);
    kill(0, SIGTERM);
    sleep(5);
    return 0;
  }
  if (argc > 2 && !strcmp(argv[1], "unobserved-writes")) {
    unobserved_writes(argv[2]);
    return 0;
  }
  /* A server outside every sandbox: serve-stream PATH (accepts forever,
   * writes "o" to each) or serve-dgram PATH (reads forever); the socket
   * file mode 0777; prints "serving" once listening. */
  if (argc > 2 && (!strcmp(argv[1], "serve-stream") || !strcmp(argv[1], "serve-dgram"))) {
    int dgram = !strcmp(argv[1], "serve-dgram");
    /* A client that closes first must not end the server. */
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    strncpy(sun.sun_path, argv[2], sizeof sun.sun_path - 1);
    unlink(sun.sun_path);
    int l = socket(AF_UNIX, dgram ? SOCK_DGRAM : SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&sun, sizeof sun) || (!dgram && listen(l, 16)))
      return perror("serve"), 125;
    chmod(sun.sun_path, 0777);
    printf("serving\n");
    fflush(stdout);
    char b[64];
    for (;;) {
      if (dgram) {
        (void)!recv(l, b, sizeof b, 0);
      } else {
        int c = accept(l, NULL, NULL);
        if (c >= 0) {
          (void)!write(c, "o", 1);
          close(c);
        }
      }
    }
  }
  /* pair-stdio NAME CMD...: CMD with its stdout one end of a Unix
   * stream socketpair made here (as a Node spawner passes it; its output
   * must fit the socket's buffer), copied to this stdout once it ended;
   * then whether an abstract socket named NAME is in this network
   * namespace, the end still open here: "squat=present" or "absent". */
  if (argc > 3 && !strcmp(argv[1], "pair-stdio")) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return perror("socketpair"), 125;
    pid_t child = fork();
    if (child == 0) {
      dup2(sv[1], 1);
      execvp(argv[3], argv + 3);
      _exit(127);
    }
    int st = 0;
    waitpid(child, &st, 0);
    char want[128], line[512];
    snprintf(want, sizeof want, " @%s\n", argv[2]);
    FILE *f = fopen("/proc/net/unix", "r");
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
      size_t l = strlen(line), w = strlen(want);
      if (l >= w && !strcmp(line + l - w, want)) found = 1;
    }
    if (f) fclose(f);
    char b[4096];
    ssize_t n;
    while ((n = recv(sv[0], b, sizeof b, MSG_DONTWAIT)) > 0) (void)!write(1, b, (size_t)n);
    printf("squat=%s\n", found ? "present" : "absent");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 125;
  }
  /* loose-unix NAME CMD...: CMD with fd 3 an unconnected Unix stream
   * socket made here, while a listener here holds the abstract NAME and
   * answers "HOST" (issue 67: an inherited socket's connect to a name
   * the run also bound). */
  if (argc > 3 && !strcmp(argv[1], "loose-unix")) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(argv[2]);
    if (n + 1 > sizeof a.sun_path) return 125;
    memcpy(a.sun_path + 1, argv[2], n);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, len) || listen(l, 8)) return perror("listen"), 125;
    pid_t server = fork();
    if (server == 0) {
      for (;;) {
        int c = accept(l, 0, 0);
        if (c >= 0) { (void)!write(c, "HOST", 4); close(c); }
      }
    }
    int loose = socket(AF_UNIX, SOCK_STREAM, 0);
    if (loose < 0 || dup2(loose, 3) != 3) return perror("loose"), 125;
    pid_t child = fork();
    if (child == 0) {
      execvp(argv[3], argv + 3);
      _exit(127);
    }
    int st = 0;
    waitpid(child, &st, 0);
    kill(server, SIGKILL);
    waitpid(server, 0, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 125;
  }
  /* pair-race: 2,000 datagram socketpairs, each into a fresh page that
   * another thread makes read-only and seals (mseal, where the kernel has
   * it) while the call waits: "pair-race=N" for the calls that succeeded
   * although the page was read-only before they returned (issue 67: the
   * stub wrote through the protection). */
  if (argc > 1 && !strcmp(argv[1], "pair-race"))
    return pair_race();
  if (argc > 3 && !strcmp(argv[1], "observe-collect"))
    return observe_collect(argv[2], argv + 3);
  if (argc > 3 && !strcmp(argv[1], "bench"))
    return bench(atoi(argv[2]), argc - 3, argv + 3);
  return -1;
}

static int *race_sv;
static volatile int race_go, race_seen, race_delay;

static void *race_protect(void *unused) {
  (void)unused;
  while (!race_go) {}
  struct timespec t = {0, race_delay};
  if (race_delay) nanosleep(&t, 0);
  mprotect(race_sv, 4096, PROT_READ);
  syscall(462, race_sv, 4096, 0); /* mseal (Linux 6.10), ENOSYS before */
  race_seen = race_sv[0];
  return 0;
}

static int pair_race(void) {
  int through = 0;
  for (int i = 0; i < 2000; i++) {
    race_sv = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (race_sv == MAP_FAILED) return 125;
    race_sv[0] = race_sv[1] = -1;
    race_go = 0;
    race_delay = (i * 37) % 200000;
    pthread_t t;
    pthread_create(&t, 0, race_protect, 0);
    race_go = 1;
    int r = socketpair(AF_UNIX, SOCK_DGRAM, 0, race_sv);
    pthread_join(t, 0);
    if (r == 0 && race_seen == -1 && race_sv[0] != -1) through++;
    if (r == 0 && race_sv[0] >= 0) { close(race_sv[0]); close(race_sv[1]); }
    munmap(race_sv, 4096);
  }
  printf("pair-race=%d\n", through);
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int w = wrapper(argc, argv);
  if (w >= 0)
    return w;
  for (int i = 1; i < argc; i++) {
    const char *c = argv[i];
    errno = 0;
    if (!strcmp(c, "unix-stream")) sock(c, AF_UNIX, SOCK_STREAM, 0, AF_UNIX);
    else if (!strcmp(c, "unix-dgram")) sock(c, AF_UNIX, SOCK_DGRAM, 0, AF_UNIX);
    else if (!strcmp(c, "unix-seqpacket")) sock(c, AF_UNIX, SOCK_SEQPACKET, 0, AF_UNIX);
    else if (!strcmp(c, "unix-flags")) sock(c, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, AF_UNIX);
    else if (!strcmp(c, "unix-high")) sock(c, 0x100000001UL, SOCK_STREAM, 0, AF_UNIX);
    else if (!strcmp(c, "unix-allhigh")) sock(c, 0xffffffff00000001UL, SOCK_STREAM, 0, AF_UNIX);
    else if (!strcmp(c, "vsock")) sock(c, 40, SOCK_STREAM, 0, 40);
    else if (!strcmp(c, "inet")) sock(c, AF_INET, SOCK_STREAM, 0, AF_INET);
    else if (!strcmp(c, "inet6")) sock(c, AF_INET6, SOCK_DGRAM, 0, AF_INET6);
    else if (!strcmp(c, "netlink")) sock(c, AF_NETLINK, SOCK_RAW, 0, AF_NETLINK);
    else if (!strcmp(c, "pair-stream")) pair(c, AF_UNIX, SOCK_STREAM);
    else if (!strcmp(c, "pair-seqpacket")) pair(c, AF_UNIX, SOCK_SEQPACKET);
    else if (!strcmp(c, "pair-dgram")) pair(c, AF_UNIX, SOCK_DGRAM);
    else if (!strcmp(c, "pair-dgram-flags")) pair(c, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC);
    else if (!strcmp(c, "pair-raw")) pair(c, AF_UNIX, SOCK_RAW);
    /* io_uring: NULL params / fd -1, which the kernel refuses on its own. */
    /* row 19: fd -1, so the kernel itself would answer EBADF */
    else if (!strcmp(c, "tiocsti")) raw(c, SYS_ioctl, -1, TIOCSTI, (long)"x", 0, 0);
    else if (!strcmp(c, "tiocsti-high")) raw(c, SYS_ioctl, -1, (long)(0x100000000UL | TIOCSTI), (long)"x", 0, 0);
    else if (!strcmp(c, "tioclinux")) raw(c, SYS_ioctl, -1, TIOCLINUX, (long)"x", 0, 0);
    else if (!strcmp(c, "tcgets")) raw(c, SYS_ioctl, -1, TCGETS, 0, 0, 0);
    else if (!strcmp(c, "tiocsti-tty")) type_into_terminal(c);
    else if (!strcmp(c, "io-uring-setup")) raw(c, 425, 1, 0, 0, 0, 0);
    else if (!strcmp(c, "io-uring-enter")) raw(c, 426, -1, 0, 0, 0, 0);
    else if (!strcmp(c, "io-uring-register")) raw(c, 427, -1, 0, 0, 0, 0);
    /* unshare/clone with flag combinations the kernel rejects (EINVAL). */
    else if (!strcmp(c, "unshare-user")) raw(c, SYS_unshare, CLONE_NEWUSER | 0x1, 0, 0, 0, 0);
    else if (!strcmp(c, "unshare-ns")) raw(c, SYS_unshare, CLONE_NEWNS | 0x1, 0, 0, 0, 0);
    else if (!strcmp(c, "unshare-high")) raw(c, SYS_unshare, (long)(0x100000000UL | CLONE_NEWUSER), 0, 0, 0, 0);
    else if (!strcmp(c, "unshare-net")) raw(c, SYS_unshare, CLONE_NEWNET | 0x1, 0, 0, 0, 0);
    else if (!strcmp(c, "clone-user")) raw(c, SYS_clone, CLONE_NEWUSER | CLONE_FS | SIGCHLD, 0, 0, 0, 0);
    else if (!strcmp(c, "clone-user-high")) raw(c, SYS_clone, (long)(0x100000000UL | CLONE_NEWUSER | CLONE_FS | SIGCHLD), 0, 0, 0, 0);
    else if (!strcmp(c, "clone-ns")) raw(c, SYS_clone, CLONE_NEWNS | CLONE_FS | SIGCHLD, 0, 0, 0, 0);
    else if (!strcmp(c, "clone3")) raw(c, 435, 0, 0, 0, 0, 0);
    else if (!strcmp(c, "setns")) raw(c, SYS_setns, -1, 0, 0, 0, 0);
    else if (!strcmp(c, "mount")) raw(c, SYS_mount, 1, 1, 1, 0, 0);
    else if (!strcmp(c, "umount2")) raw(c, SYS_umount2, (long)"/", -1, 0, 0, 0);
    else if (!strcmp(c, "pivot-root")) raw(c, SYS_pivot_root, 1, 1, 0, 0, 0);
    else if (!strcmp(c, "open-tree")) raw(c, 428, -1, 1, -1, 0, 0);
    else if (!strcmp(c, "move-mount")) raw(c, 429, -1, 1, -1, 1, -1);
    else if (!strcmp(c, "fsopen")) raw(c, 430, 1, -1, 0, 0, 0);
    else if (!strcmp(c, "fsconfig")) raw(c, 431, -1, -1, 0, 0, 0);
    else if (!strcmp(c, "fsmount")) raw(c, 432, -1, -1, -1, 0, 0);
    else if (!strcmp(c, "fspick")) raw(c, 433, -1, 1, -1, 0, 0);
    else if (!strcmp(c, "mount-setattr")) raw(c, 442, -1, 1, -1, 0, 0);
    else if (!strcmp(c, "open-tree-attr")) raw(c, 467, -1, 1, -1, 0, 0);
    else if (!strcmp(c, "stack-allow")) stack_allow(c);
    else if (!strcmp(c, "foreign")) foreign_with(c, 'm');
    else if (!strcmp(c, "kill-foreign")) foreign_with(c, 'k');
    else if (!strcmp(c, "ptrace-foreign")) foreign_with(c, 'p');
    else if (!strncmp(c, "abstract-connect:", 17)) abstract_connect("abstract-connect", c + 17);
    else if (!strncmp(c, "connect-path:", 13)) {
      struct sockaddr_un sun = {.sun_family = AF_UNIX};
      strncpy(sun.sun_path, c + 13, sizeof sun.sun_path - 1);
      int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      long r = fd < 0 ? -1 : connect(fd, (struct sockaddr *)&sun, sizeof sun);
      result("connect-path", r, errno);
      if (fd >= 0) close(fd);
    }
    else if (!strncmp(c, "tcp-loop:", 9)) {
      /* N connects to a TCP listener of its own (each accepted and both
         ends closed): the mean time of one, for the policy's cost. */
      long n = atol(c + 9), ok = 0;
      int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
      socklen_t ilen = sizeof in;
      if (l < 0 || bind(l, (struct sockaddr *)&in, ilen) || listen(l, 64) ||
          getsockname(l, (struct sockaddr *)&in, &ilen)) {
        result("tcp-loop", -1, errno);
        continue;
      }
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      for (long i = 0; i < n; i++) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s >= 0 && !connect(s, (struct sockaddr *)&in, ilen)) {
          int d = accept4(l, NULL, NULL, SOCK_CLOEXEC);
          if (d >= 0) ok++, close(d);
        }
        if (s >= 0) close(s);
      }
      clock_gettime(CLOCK_MONOTONIC, &b);
      printf("tcp-loop=ok:%ld\ntcp-loop-ns=%ld\n", ok,
             n ? ((b.tv_sec - a.tv_sec) * 1000000000L + b.tv_nsec - a.tv_nsec) / n : 0);
      close(l);
    }
    else if (!strncmp(c, "refuse-loop:", 12)) {
      /* A refused call N times (report.rs's count): how many EPERM, and
         the mean time of one. */
      long n = atol(c + 12), eperm = 0;
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      for (long i = 0; i < n; i++)
        if (syscall(SYS_socket, AF_UNIX, SOCK_DGRAM, 0) < 0 && errno == EPERM) eperm++;
      clock_gettime(CLOCK_MONOTONIC, &b);
      printf("refuse-loop=eperm:%ld\nrefuse-loop-ns=%ld\n", eperm,
             n ? ((b.tv_sec - a.tv_sec) * 1000000000L + b.tv_nsec - a.tv_nsec) / n : 0);
    }
    else if (!strncmp(c, "set-name:", 9)) {
      /* The name /proc/PID/comm shows from now on (the refusal line reads
         it for each call). */
      result("set-name", prctl(PR_SET_NAME, c + 9, 0, 0, 0), errno);
    }
    else if (!strncmp(c, "exec:", 5)) {
      /* The rest of the checks in the program at PATH, this same process. */
      fflush(stdout);
      argv[i] = (char *)c + 5;
      execv(c + 5, argv + i);
      result("exec", -1, errno);
    }
    else if (!strncmp(c, "own-path:", 9)) own_path(c + 9);
    else if (!strncmp(c, "own-dgram:", 10)) own_dgram(c + 10);
    else if (!strncmp(c, "dgram-to:", 9)) dgram_to(c + 9);
    else if (!strcmp(c, "dgram-pair")) dgram_pair();
    else if (!strncmp(c, "bind-fd:", 8)) {
      /* bind-fd:N:NAME: the abstract name NAME bound on descriptor N. */
      char *name = strchr(c + 8, ':');
      struct sockaddr_un sun = {.sun_family = AF_UNIX};
      size_t len = name ? strlen(name + 1) : 0;
      if (len > sizeof sun.sun_path - 1) len = sizeof sun.sun_path - 1;
      if (name) memcpy(sun.sun_path + 1, name + 1, len);
      long r = bind(atoi(c + 8), (struct sockaddr *)&sun,
                    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len));
      result("bind-fd", r, errno);
    }
    else if (!strcmp(c, "fence")) fence();
    else if (!strcmp(c, "own-unix")) own_connect(c, 0);
    else if (!strcmp(c, "own-tcp")) own_connect(c, 1);
    else if (!strncmp(c, "outside:", 8)) outside_calls("outside", (pid_t)atoi(c + 8));
    else if (!strcmp(c, "self-calls")) outside_calls("self", 0);
    else if (!strncmp(c, "join:", 5)) join_group((pid_t)atoi(c + 5));
    else if (!strncmp(c, "procfs-write:", 13)) procfs_write((pid_t)atoi(c + 13));
    else if (!strncmp(c, "front-steal:", 12)) front_steal((pid_t)atoi(c + 12));
    else if (!strncmp(c, "exec-child:", 11)) exec_child("exec-child", c + 11);
    else if (!strncmp(c, "spin-write:", 11)) {
      /* Retries creating the file in a tight loop until it works (a
       * command racing the mount guard), then writes to it. */
      printf("spinning\n");
      fflush(stdout);
      int fd;
      while ((fd = open(c + 11, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        ;
      (void)!write(fd, "pwned\n", 6);
      close(fd);
      printf("spin-write=landed\n");
    }
    else if (!strcmp(c, "ptrace-init")) {
      /* PTRACE_SEIZE does not stop the tracee, so nothing hangs if it works. */
      long r = ptrace(PTRACE_SEIZE, 1, 0, 0);
      int err = errno;
      if (r == 0) ptrace(PTRACE_DETACH, 1, 0, 0);
      result(c, r, err);
    } else if (!strcmp(c, "mem-init")) {
      int fd = open("/proc/1/mem", O_RDONLY | O_CLOEXEC);
      int err = errno;
      if (fd >= 0) close(fd);
      result(c, fd, err);
    }
    else if (!strcmp(c, "fork")) {
      fflush(stdout);
      pid_t pid = fork();
      if (pid == 0) _exit(7);
      int st = 0;
      if (pid > 0) waitpid(pid, &st, 0);
      result(c, pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : -1, errno);
    } else if (!strcmp(c, "thread")) {
      pthread_t t;
      int r = pthread_create(&t, NULL, thread_fn, NULL);
      if (r == 0) pthread_join(t, NULL);
      result(c, r == 0 ? 0 : -1, r);
    }
#if defined(__x86_64__)
    else if (!strcmp(c, "x32-getpid")) in_child(c, x32_getpid);
    else if (!strcmp(c, "x32-socket")) in_child(c, x32_socket);
    else if (!strcmp(c, "i386-socket")) in_child(c, i386_socket);
    else if (!strcmp(c, "i386-socketcall")) in_child(c, i386_socketcall);
    else if (!strcmp(c, "i386-getpid")) in_child(c, i386_getpid);
#endif
    else printf("%s=unknown-check\n", c);
  }
  return 0;
}
