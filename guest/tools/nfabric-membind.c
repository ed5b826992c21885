/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-membind: run a program with its memory bound to one NUMA node,
 * as `numactl --membind=NODE` does (the guest image has no numactl).
 *
 *   nfabric-membind NODE CMD [ARG...]
 *
 * Sets the MPOL_BIND policy for NODE with set_mempolicy(2), which the
 * program inherits across execve(2); every page it (and its children, and
 * tmpfs files it writes) allocates then comes from NODE, or the allocation
 * fails.  Used to run programs on CXL memory onlined as System RAM
 * (docs/guest.md, "System RAM").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NF_MPOL_BIND 2      /* <linux/mempolicy.h>, not in the static libc */

int main(int argc, char **argv)
{
    unsigned long mask[4] = { 0 };
    char *end;
    long node;

    if (argc < 3) {
        fprintf(stderr, "usage: nfabric-membind NODE CMD [ARG...]\n");
        return 2;
    }
    node = strtol(argv[1], &end, 10);
    if (*end || end == argv[1] || node < 0 ||
        node >= (long)(sizeof(mask) * 8)) {
        fprintf(stderr, "nfabric-membind: bad node \"%s\" (0..%zu)\n", argv[1],
                sizeof(mask) * 8 - 1);
        return 2;
    }
    mask[node / (8 * sizeof(mask[0]))] |= 1ul << (node % (8 * sizeof(mask[0])));
    if (syscall(SYS_set_mempolicy, NF_MPOL_BIND, mask, sizeof(mask) * 8 + 1) != 0) {
        fprintf(stderr, "nfabric-membind: set_mempolicy(MPOL_BIND, node %ld): %s\n",
                node, strerror(errno));
        return 1;
    }
    execvp(argv[2], argv + 2);
    fprintf(stderr, "nfabric-membind: %s: %s\n", argv[2], strerror(errno));
    return 127;
}
