/*
 * bigreserve: the C sample bot behind the address-space reservation of a Go, .NET or JVM
 * runtime, for the launcher's tests (Go and .NET are not installed where they run).
 *
 * Before it plays, it reserves RESERVE_GIB GiB (default 64) of address space as those runtimes
 * do for their heaps (PROT_NONE, MAP_NORESERVE: no memory is committed), then commits and
 * touches COMMIT_MIB MiB of it (default 16) as a heap would. An address-space limit
 * (RLIMIT_AS) below the reservation stops it at start ("bigreserve: cannot reserve ..." on
 * stderr, exit status 2); a limit on the memory used (a cgroup, RLIMIT_DATA) lets it play.
 *
 * Build: gcc -O2 -std=c11 -I sample_bots -o bigreserve tests/bots/bigreserve.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define main c_bot_main
#include "c_bot.c"
#undef main

#ifndef RESERVE_GIB
#define RESERVE_GIB 64
#endif
#ifndef COMMIT_MIB
#define COMMIT_MIB 16
#endif

int main(void) {
    size_t reserve = (size_t)RESERVE_GIB << 30, commit = (size_t)COMMIT_MIB << 20;
    char *arena = mmap(NULL, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arena == MAP_FAILED) {
        fprintf(stderr, "bigreserve: cannot reserve %d GiB of address space: %s\n", RESERVE_GIB, strerror(errno));
        return 2;
    }
    if (mprotect(arena, commit, PROT_READ | PROT_WRITE) != 0) {
        fprintf(stderr, "bigreserve: cannot commit %d MiB: %s\n", COMMIT_MIB, strerror(errno));
        return 2;
    }
    memset(arena, 1, commit);
    fprintf(stderr, "bigreserve: %d GiB reserved, %d MiB committed and touched\n", RESERVE_GIB, COMMIT_MIB);
    return c_bot_main();
}
