/*
 * instant: the benchmark's minimal bot in C (C11 and POSIX, libc only). It answers every
 * `request` with the first legal action at once, so that a benchmark measures the server, not
 * the bot (`make bench`, arena/tools/bench.py).
 *
 * Environment (docs/protocol.md section 3):
 *   ARENA_HOST, ARENA_PORT   the server (TCP; the connection is retried while it starts)
 *   ARENA_NAME, ARENA_TOKEN  the bot's name and token
 *   ARENA_BOTS=N             (default 1) hold N connections in this one process, named
 *                            NAME-0 .. NAME-(N-1), all with ARENA_TOKEN; connections 2k and
 *                            2k+1 are expected to play each other (a "pair")
 *   ARENA_LATENCY_FILE=PATH  write one line per sample: the microseconds between this process
 *                            sending a pair's answer and it reading that pair's next request
 *                            (the server's time between the two, plus two loopback hops)
 *   ARENA_THINK_MS=T[,S]     (default 0) "think" before each answer: the answer is held and sent
 *                            T ms after its request was read, or with S a time drawn uniformly
 *                            from T-S .. T+S ms (a fixed-seed generator), so that matches started
 *                            together do not answer in lockstep; the process keeps serving its
 *                            other connections meanwhile. The latency samples still run from an
 *                            answer's sending to the pair's next request: they hold no thinking
 *   ARENA_PINGPONG=SIZE,N    no protocol: send a line of SIZE bytes (newline included) and
 *                            wait for a line, N times; print "rounds seconds" on stdout
 *
 * At the end (all connections closed by the server) it prints one JSON line on stdout: the
 * lines and bytes it received, the requests among them, and the answers it sent (bytes count
 * the newline).
 *
 * Protocol handling: `hello` asks for the compact legal form (section 8.13); every line is
 * scanned, not parsed: a `request`'s id and the first element of its `legal` array are copied
 * into the answer (a compact `discard` is answered with the first `min` cards of `from`). A
 * connection ends when the server closes it; the process ends when all of its connections did.
 *
 * Build: `make sample_bots/bench/instant` (gcc -O2 -std=c11 -Wall -Wextra -Werror).
 */
#define _GNU_SOURCE /* ppoll: a think time kept to the microsecond, not rounded to a millisecond */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd;
    char *buf;        /* bytes read, not yet split into lines */
    size_t len, cap;
    char *held;       /* ARENA_THINK_MS: the answer waiting for its time, or NULL */
    size_t held_len;
    double due;       /* when to send it (now_s clock) */
} conn;

static double think_s, spread_s; /* ARENA_THINK_MS=T,S in seconds */
static unsigned long long rng = 0x9E3779B97F4A7C15ULL;

/* The next think time in seconds: think_s, or uniform in think_s +- spread_s (xorshift64). */
static double think_time(void) {
    if (spread_s <= 0.0) return think_s;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    double u = (double)(rng >> 11) / 9007199254740992.0; /* [0, 1) */
    double t = think_s - spread_s + 2.0 * spread_s * u;
    return t > 0.0 ? t : 0.0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static int dial(const char *host, const char *port) {
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    for (int attempt = 0; attempt < 200; attempt++) {
        if (getaddrinfo(host, port, &hints, &res) == 0) {
            int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
            if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
                freeaddrinfo(res);
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                return fd;
            }
            if (fd >= 0) close(fd);
            freeaddrinfo(res);
        }
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    die("connect");
    return -1;
}

static void send_all(int fd, const char *data, size_t n) {
    while (n > 0) {
        ssize_t k = send(fd, data, n, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) continue;
            return; /* the server closed: the read side sees it */
        }
        data += k;
        n -= (size_t)k;
    }
}

/* Copy the JSON value starting at p (a string, number, array or object without strings
   holding brackets) into out; return its length or 0. */
static size_t copy_value(const char *p, const char *end, char *out, size_t cap) {
    const char *q = p;
    if (*q == '"') {
        for (q++; q < end && *q != '"'; q++)
            if (*q == '\\') q++;
        q++;
    } else if (*q == '[' || *q == '{') {
        int depth = 0, in_str = 0;
        for (; q < end; q++) {
            if (in_str) {
                if (*q == '\\') q++;
                else if (*q == '"') in_str = 0;
            } else if (*q == '"') in_str = 1;
            else if (*q == '[' || *q == '{') depth++;
            else if (*q == ']' || *q == '}') {
                if (--depth == 0) { q++; break; }
            }
        }
    } else {
        while (q < end && *q != ',' && *q != ']' && *q != '}') q++;
    }
    size_t n = (size_t)(q - p);
    if (n == 0 || n >= cap) return 0;
    memcpy(out, p, n);
    return n;
}

/* The answer to a compact discard {"choose":{"from":[...],"min":m,...}}: the first m cards. */
static size_t compact_answer(const char *p, const char *end, char *out, size_t cap) {
    const char *from = strstr(p, "\"from\":[");
    const char *min = strstr(p, "\"min\":");
    if (from == NULL || min == NULL || from > end || min > end) return 0;
    int want = atoi(min + 6);
    size_t n = 0;
    out[n++] = '[';
    const char *q = from + 8;
    for (int i = 0; i < want; i++) {
        while (q < end && *q != '"') q++;
        if (q + 3 >= end || n + 6 >= cap) return 0;
        if (i > 0) out[n++] = ',';
        memcpy(out + n, q, 4); /* "Xy" */
        n += 4;
        q += 4;
    }
    out[n++] = ']';
    return n;
}

static long long lines_in, bytes_in, requests, request_bytes, answers, answer_bytes;

/* Handle one line of connection c; return 1 if an answer was sent. */
static int handle(conn *c, const char *line, size_t len) {
    const char *end = line + len;
    if (len < 20 || memcmp(line, "{\"type\":\"request\"", 17) != 0) return 0;
    const char *id = strstr(line, ",\"id\":");
    const char *legal = strstr(line, "\"legal\":");
    if (id == NULL || legal == NULL || legal >= end) return 0;
    long rid = strtol(id + 6, NULL, 10);
    const char *v = legal + 8;
    char action[4096];
    size_t n;
    if (*v == '[') n = copy_value(v + 1, end, action, sizeof action);
    else n = compact_answer(v, end, action, sizeof action);
    if (n == 0) return 0;
    char out[4200];
    int k = snprintf(out, sizeof out, "{\"type\":\"action\",\"id\":%ld,\"action\":%.*s}\n", rid, (int)n, action);
    answers++;
    answer_bytes += k;
    if (think_s > 0.0) { /* held until due: sent by send_due() */
        free(c->held);
        c->held = malloc((size_t)k);
        if (c->held == NULL) die("malloc");
        memcpy(c->held, out, (size_t)k);
        c->held_len = (size_t)k;
        c->due = now_s() + think_time();
        return 0;
    }
    send_all(c->fd, out, (size_t)k);
    return 1;
}

/* ARENA_THINK_MS: send every held answer that is due, stamping its pair's latency clock; return
   the seconds until the next one is due (-1: none held). The caller waits exactly that long
   (ppoll): a wait rounded up to whole milliseconds would hold every answer that falls due
   meanwhile and send them together, so that answers drawn independently reach the server in
   bursts (as if the bots thought in lockstep). */
static double send_due(conn *conns, int n, double *answered, int timing) {
    double now = now_s(), next = -1.0;
    for (int i = 0; i < n; i++) {
        conn *c = &conns[i];
        if (c->held == NULL) continue;
        if (c->due <= now) {
            send_all(c->fd, c->held, c->held_len);
            if (timing) answered[i / 2] = now_s();
            free(c->held);
            c->held = NULL;
        } else if (next < 0.0 || c->due < next) {
            next = c->due;
        }
    }
    if (next < 0.0) return -1.0;
    double left = next - now_s();
    return left > 0.0 ? left : 0.0;
}

static int pingpong(const char *host, const char *port, const char *spec) {
    int size = 0, rounds = 0;
    if (sscanf(spec, "%d,%d", &size, &rounds) != 2 || size < 1 || rounds < 1) {
        fprintf(stderr, "ARENA_PINGPONG is SIZE,N\n");
        return 2;
    }
    int fd = dial(host, port);
    char *line = malloc((size_t)size);
    if (line == NULL) die("malloc");
    memset(line, 'a', (size_t)size);
    line[size - 1] = '\n';
    char buf[65536];
    size_t have = 0;
    int done = 0;
    double t0 = now_s();
    for (; done < rounds; done++) {
        send_all(fd, line, (size_t)size);
        for (;;) {
            char *nl = memchr(buf, '\n', have);
            if (nl != NULL) {
                size_t used = (size_t)(nl - buf) + 1;
                memmove(buf, buf + used, have - used);
                have -= used;
                break;
            }
            if (have == sizeof buf) have = 0; /* a reply line longer than the buffer */
            ssize_t k = recv(fd, buf + have, sizeof buf - have, 0);
            if (k <= 0) goto out;
            have += (size_t)k;
        }
    }
out:
    printf("%d %.6f\n", done, now_s() - t0);
    close(fd);
    return 0;
}

int main(void) {
    const char *host = getenv("ARENA_HOST"), *port = getenv("ARENA_PORT");
    const char *name = getenv("ARENA_NAME"), *token = getenv("ARENA_TOKEN");
    const char *count = getenv("ARENA_BOTS"), *latency = getenv("ARENA_LATENCY_FILE");
    const char *ping = getenv("ARENA_PINGPONG"), *think = getenv("ARENA_THINK_MS");
    if (think != NULL) {
        double t = 0.0, spread = 0.0;
        if (sscanf(think, "%lf,%lf", &t, &spread) < 1 || t < 0.0 || spread < 0.0) {
            fprintf(stderr, "ARENA_THINK_MS is T or T,S (milliseconds, not negative)\n");
            return 2;
        }
        think_s = t / 1000.0;
        spread_s = spread / 1000.0;
    }
    if (host == NULL) host = "127.0.0.1";
    if (port == NULL) {
        fprintf(stderr, "set ARENA_PORT (and ARENA_NAME, ARENA_TOKEN)\n");
        return 2;
    }
    if (ping != NULL) return pingpong(host, port, ping);
    if (name == NULL || token == NULL) {
        fprintf(stderr, "set ARENA_NAME and ARENA_TOKEN\n");
        return 2;
    }
    int n = count != NULL ? atoi(count) : 1;
    if (n < 1) n = 1;
    FILE *lat = NULL;
    if (latency != NULL && (lat = fopen(latency, "w")) == NULL) die(latency);
    conn *conns = calloc((size_t)n, sizeof *conns);
    struct pollfd *pfd = calloc((size_t)n, sizeof *pfd);
    double *answered = calloc((size_t)(n + 1) / 2, sizeof *answered); /* per pair, 0 = none */
    if (conns == NULL || pfd == NULL || answered == NULL) die("calloc");
    for (int i = 0; i < n; i++) {
        char hello[512];
        int k = count != NULL
            ? snprintf(hello, sizeof hello, "{\"type\":\"hello\",\"name\":\"%s-%d\",\"token\":\"%s\",\"protocol\":1,\"legal\":\"compact\"}\n", name, i, token)
            : snprintf(hello, sizeof hello, "{\"type\":\"hello\",\"name\":\"%s\",\"token\":\"%s\",\"protocol\":1,\"legal\":\"compact\"}\n", name, token);
        conns[i].fd = dial(host, port);
        conns[i].cap = 65536;
        conns[i].buf = malloc(conns[i].cap);
        if (conns[i].buf == NULL) die("malloc");
        send_all(conns[i].fd, hello, (size_t)k);
        pfd[i].fd = conns[i].fd;
        pfd[i].events = POLLIN;
    }
    int open = n;
    while (open > 0) {
        double wait_s = think_s > 0.0 ? send_due(conns, n, answered, lat != NULL) : -1.0;
        struct timespec wait_ts = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
        if (ppoll(pfd, (nfds_t)n, wait_s < 0.0 ? NULL : &wait_ts, NULL) < 0) {
            if (errno == EINTR) continue;
            die("poll");
        }
        for (int i = 0; i < n; i++) {
            if (pfd[i].fd < 0 || pfd[i].revents == 0) continue;
            conn *c = &conns[i];
            if (c->cap - c->len < 65536) {
                c->cap *= 2;
                c->buf = realloc(c->buf, c->cap);
                if (c->buf == NULL) die("realloc");
            }
            ssize_t k = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
            if (k <= 0) {
                free(c->held);
                c->held = NULL;
                close(c->fd);
                pfd[i].fd = -1;
                open--;
                continue;
            }
            double t_read = lat != NULL ? now_s() : 0.0;
            c->len += (size_t)k;
            size_t start = 0;
            for (;;) {
                char *nl = memchr(c->buf + start, '\n', c->len - start);
                if (nl == NULL) break;
                size_t ll = (size_t)(nl - (c->buf + start));
                char *line = c->buf + start;
                *nl = '\0';
                int pair = i / 2;
                if (lat != NULL && ll > 20 && memcmp(line, "{\"type\":\"match_end\"", 19) == 0)
                    answered[pair] = 0.0;
                int is_request = ll > 20 && memcmp(line, "{\"type\":\"request\"", 17) == 0;
                lines_in++;
                bytes_in += (long long)ll + 1;
                if (is_request) {
                    requests++;
                    request_bytes += (long long)ll + 1;
                }
                if (is_request && lat != NULL && answered[pair] > 0.0)
                    fprintf(lat, "%.1f\n", (t_read - answered[pair]) * 1e6);
                if (handle(c, line, ll) && lat != NULL) answered[pair] = now_s();
                start += ll + 1;
            }
            memmove(c->buf, c->buf + start, c->len - start);
            c->len -= start;
        }
    }
    if (lat != NULL) fclose(lat);
    printf("{\"lines\":%lld,\"bytes\":%lld,\"requests\":%lld,\"request_bytes\":%lld,"
           "\"answers\":%lld,\"answer_bytes\":%lld}\n",
           lines_in, bytes_in, requests, request_bytes, answers, answer_bytes);
    return 0;
}
