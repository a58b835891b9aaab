/* Forks children that pause until a fork is refused, then says how many
 * it made and the errno (tests/tasks.rs, tests/vm.rs: the task cap). */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    int n = 0;
    for (;;) {
        pid_t p = fork();
        if (p == 0) {
            pause();
            _exit(0);
        }
        if (p < 0) {
            printf("forked %d errno %d\n", n, errno);
            return 0;
        }
        n++;
    }
}
