/* Which of a binary's functions a run executes, in the order first
 * entered: the input of tests/order.rs, which keeps link/run-order.txt
 * (the run's code laid out together by the linker).
 *
 *   trace BINARY FUNCTIONS OUT -- PROGRAM [ARGS...]
 *
 * FUNCTIONS: one "HEXADDR NAME" line per function of BINARY (its ELF
 * virtual addresses, as `nm` prints them). Runs PROGRAM under ptrace,
 * following every fork, vfork and clone. In each task that executes
 * BINARY (told by device and inode), a breakpoint goes on the first byte
 * of every function; the first time one is hit, the function's name is
 * appended to OUT, the byte is put back and the task goes on. Other tasks
 * (bubblewrap, the command) run untouched. x86_64 only. A development
 * tool: nothing in a build or a run uses it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TASKS 4096

struct func {
    uint64_t addr;
    char *name;
    int hit;
};

struct task {
    pid_t pid;
    uintptr_t bias; /* where BINARY's first mapping is, in this task */
    int started;    /* past its first stop */
    int configured; /* its parent's clone event has said what it runs */
    int waiting;    /* stopped at its first stop, before that event */
};

static struct func *funcs;
static size_t nfuncs;
static struct task tasks[MAX_TASKS];
static int ntasks;
static dev_t bin_dev;
static ino_t bin_ino;
static FILE *out;

static struct task *find(pid_t pid, int make) {
    for (int i = 0; i < ntasks; i++)
        if (tasks[i].pid == pid) return &tasks[i];
    if (!make) return NULL;
    if (ntasks == MAX_TASKS) {
        fprintf(stderr, "trace: too many tasks\n");
        exit(2);
    }
    tasks[ntasks] = (struct task){.pid = pid};
    return &tasks[ntasks++];
}

static int by_addr(const void *a, const void *b) {
    uint64_t x = ((const struct func *)a)->addr, y = ((const struct func *)b)->addr;
    return x < y ? -1 : x > y;
}

static struct func *func_at(uint64_t addr) {
    size_t lo = 0, hi = nfuncs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (funcs[mid].addr < addr) lo = mid + 1;
        else hi = mid;
    }
    return lo < nfuncs && funcs[lo].addr == addr ? &funcs[lo] : NULL;
}

/* Writes byte `b` at `addr` in pid's memory; returns the old byte. */
static int poke_byte(pid_t pid, uintptr_t addr, int b) {
    errno = 0;
    long word = ptrace(PTRACE_PEEKTEXT, pid, (void *)addr, 0);
    if (errno) return -1;
    int old = (int)(word & 0xff);
    word = (word & ~0xffL) | (b & 0xff);
    if (ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)word) != 0) return -1;
    return old;
}

static unsigned char *saved; /* the byte each breakpoint replaced */

/* After an exec: if pid now runs BINARY, arm every function not yet hit. */
static void exec_event(struct task *t) {
    char path[64];
    struct stat st;
    t->bias = 0;
    snprintf(path, sizeof path, "/proc/%d/exe", t->pid);
    if (stat(path, &st) != 0 || st.st_dev != bin_dev || st.st_ino != bin_ino) return;
    snprintf(path, sizeof path, "/proc/%d/maps", t->pid);
    FILE *m = fopen(path, "r");
    if (!m) return;
    char line[512];
    while (fgets(line, sizeof line, m)) {
        unsigned long lo, hi, off, ino;
        char perms[8];
        unsigned maj, min;
        if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off, &maj, &min, &ino) == 7
            && ino == (unsigned long)bin_ino && off == 0) {
            t->bias = lo;
            break;
        }
    }
    fclose(m);
    for (size_t i = 0; i < nfuncs; i++) {
        if (funcs[i].hit) continue;
        int old = poke_byte(t->pid, t->bias + funcs[i].addr, 0xcc);
        if (old >= 0) saved[i] = (unsigned char)old;
    }
}

/* A SIGTRAP in one of BINARY's tasks: a breakpoint of ours? */
static int breakpoint(struct task *t) {
    if (!t->bias) return 0;
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, t->pid, 0, &regs) != 0) return 0;
    uint64_t at = regs.rip - 1 - t->bias;
    struct func *f = func_at(at);
    if (!f) return 0;
    if (!f->hit) {
        f->hit = 1;
        fprintf(out, "%s\n", f->name);
    }
    /* Put the byte back (tasks sharing this memory then run on through
     * it; one that trapped meanwhile comes here too) and rerun it. */
    if (poke_byte(t->pid, regs.rip - 1, saved[f - funcs]) < 0) {
        /* Never loop on it: a non-dumpable task's memory needs a tracer
         * with CAP_SYS_PTRACE. */
        perror("trace: cannot take a breakpoint out (run the tracer as root)");
        exit(2);
    }
    regs.rip -= 1;
    ptrace(PTRACE_SETREGS, t->pid, 0, &regs);
    return 1;
}

static void load(const char *file) {
    FILE *f = fopen(file, "r");
    if (!f) {
        perror(file);
        exit(2);
    }
    size_t cap = 4096;
    funcs = malloc(cap * sizeof *funcs);
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char name[4000];
        unsigned long long addr;
        if (sscanf(line, "%llx %3999s", &addr, name) != 2) continue;
        if (nfuncs == cap) funcs = realloc(funcs, (cap *= 2) * sizeof *funcs);
        funcs[nfuncs++] = (struct func){.addr = addr, .name = strdup(name)};
    }
    fclose(f);
    qsort(funcs, nfuncs, sizeof *funcs, by_addr);
    /* One breakpoint per address (aliases share one). */
    size_t n = 0;
    for (size_t i = 0; i < nfuncs; i++)
        if (n == 0 || funcs[n - 1].addr != funcs[i].addr) funcs[n++] = funcs[i];
    nfuncs = n;
    saved = calloc(nfuncs, 1);
}

int main(int argc, char **argv) {
    if (argc < 6 || strcmp(argv[4], "--") != 0) {
        fprintf(stderr, "usage: trace BINARY FUNCTIONS OUT -- PROGRAM [ARGS...]\n");
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0) {
        perror(argv[1]);
        return 2;
    }
    bin_dev = st.st_dev;
    bin_ino = st.st_ino;
    load(argv[2]);
    out = fopen(argv[3], "w");
    if (!out) {
        perror(argv[3]);
        return 2;
    }
    pid_t child = fork();
    if (child == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        raise(SIGSTOP);
        execvp(argv[5], argv + 5);
        _exit(127);
    }
    int status;
    waitpid(child, &status, 0);
    ptrace(PTRACE_SETOPTIONS, child, 0,
           (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
                          PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL));
    find(child, 1)->started = 1;
    ptrace(PTRACE_CONT, child, 0, 0);
    int code = 0;
    for (;;) {
        pid_t pid = waitpid(-1, &status, __WALL);
        if (pid < 0) {
            if (errno == ECHILD) break;
            if (errno == EINTR) continue;
            perror("trace: waitpid");
            return 2;
        }
        struct task *t = find(pid, 1);
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            if (pid == child) code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            *t = tasks[--ntasks];
            continue;
        }
        if (!WIFSTOPPED(status)) continue;
        int sig = WSTOPSIG(status);
        int event = status >> 16;
        int deliver = 0;
        if (sig == SIGTRAP && event != 0) {
            if (event == PTRACE_EVENT_EXEC) {
                exec_event(t);
            } else {
                /* A new task: it runs what its parent runs, in shared or
                 * copied memory at the same place. */
                unsigned long msg;
                ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg);
                struct task *n = find((pid_t)msg, 1);
                t = find(pid, 0);
                n->bias = t->bias;
                n->configured = 1;
                if (n->waiting) {
                    n->waiting = 0;
                    n->started = 1;
                    ptrace(PTRACE_CONT, n->pid, 0, 0);
                }
            }
        } else if (!t->started) {
            /* A new task's first stop: run it once its parent's event has
             * said what it runs. */
            if (!t->configured) {
                t->waiting = 1;
                continue;
            }
            t->started = 1;
        } else if (sig == SIGTRAP && breakpoint(t)) {
            /* ours: go on */
        } else {
            deliver = sig;
        }
        if (ptrace(PTRACE_CONT, pid, 0, (void *)(long)deliver) != 0 && errno != ESRCH)
            perror("trace: ptrace");
    }
    fclose(out);
    return code;
}
