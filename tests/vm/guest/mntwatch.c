/* mntwatch DIR LOG STOP: every mountinfo line whose mount point is DIR, from each read of
 * /proc/self/mountinfo after every change the kernel signals (POLLPRI), appended to LOG, until
 * the file STOP exists. A fixed-interval poll can miss a mount that lives for a few
 * milliseconds; the kernel's change event cannot. LOG.ready is made once the first read is
 * done. Built static on the host by tests/vm/run (the guests have no C library headers). */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 22];

static void scan(const char *dir, FILE *log, int fd, unsigned long round) {
    ssize_t n, len = 0;
    lseek(fd, 0, SEEK_SET);
    while ((n = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += n;
    buf[len] = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        /* mount id, parent id, major:minor, root, mount point */
        char point[4096];
        if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 && strcmp(point, dir) == 0)
            fprintf(log, "%lu %s\n", round, line);
    }
    fflush(log);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: mntwatch DIR LOG STOP\n");
        return 2;
    }
    int fd = open("/proc/self/mountinfo", O_RDONLY);
    FILE *log = fopen(argv[2], "w");
    if (fd < 0 || !log) {
        perror("mntwatch");
        return 2;
    }
    unsigned long round = 0;
    scan(argv[1], log, fd, round);
    char ready[4096];
    snprintf(ready, sizeof ready, "%s.ready", argv[2]);
    FILE *r = fopen(ready, "w");
    if (r) fclose(r);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLPRI};
        int got = poll(&p, 1, 100);
        if (got > 0 && (p.revents & (POLLPRI | POLLERR)))
            scan(argv[1], log, fd, ++round);
        if (access(argv[3], F_OK) == 0)
            break;
    }
    fprintf(log, "# %lu change events\n", round);
    fclose(log);
    return 0;
}
