/*
 * c_bot: a sample bot in C (C11 and POSIX, libc only) for the Ecarte and Piquet arena.
 *
 * Protocol handling (docs/protocol.md)
 *   Reads ARENA_HOST, ARENA_PORT, ARENA_NAME, ARENA_TOKEN, ARENA_BOT_SEED and ARENA_TRANSPORT
 *   from the environment. With ARENA_TRANSPORT=stdio (a sandboxed bot, section 3.4) it speaks
 *   over stdin/stdout; otherwise it connects over TCP (retrying while the server starts). It
 *   has no TLS (libc only): asked for it (ARENA_TLS=1 or ARENA_HOST=tls://...), it says so and
 *   exits with status 2; put a TLS client such as stunnel beside it (docs/bots.md, "TLS"). It
 *   sends `hello` asking for the compact legal form (section 8.13), then reads newline-ended
 *   JSON lines into a buffer that grows as needed: a line may be of any length (a full-form
 *   Piquet discard request is over 100 KB). Each line is parsed by the small JSON reader below
 *   into a tree; every `request` is answered with one `action` carrying its id. `error` lines
 *   are logged to stderr and the bot goes on (most errors are not fatal, section 11); it exits
 *   with status 0 on `goodbye` or at the end of the stream. Nothing but protocol lines is ever
 *   written to stdout.
 *
 * Strategy (both games)
 *   discard  compact form: every card below the ten (6 7 8 9), lowest first, as many as `max`
 *            allows; if that is fewer than `min`, the lowest cards of the hand. A full list
 *            (a server that ignored the request for the compact form): its first element.
 *   play     the highest legal card in the order of the game (Ecarte K Q J A T 9 8 7,
 *            Piquet A K Q J T 9 8 7 6).
 *   bid      0 (the first legal bid).
 *   expose   keep (the rest of the talon stays hidden).
 *   others   the first legal word: propose, accept, announce, look.
 *
 * Build: `make sample_bots/c_bot` (gcc -O2 -std=c11 -Wall -Wextra -Werror).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ a small JSON reader */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct jval {
    enum jtype type;
    double num;            /* J_NUM, J_BOOL (0 or 1) */
    char *str;             /* J_STR: decoded UTF-8, NUL-terminated */
    struct jval **items;   /* J_ARR, J_OBJ: values */
    char **keys;           /* J_OBJ: keys, parallel to items */
    size_t len;
} jval;

typedef struct {
    const char *p, *end;
    int depth;
} jparser;

#define MAX_DEPTH 64

static void *xrealloc(void *ptr, size_t size) {
    void *out = realloc(ptr, size ? size : 1);
    if (!out) {
        fprintf(stderr, "c_bot: out of memory\n");
        exit(1);
    }
    return out;
}

static void jfree(jval *v) {
    if (!v) return;
    for (size_t i = 0; i < v->len; i++) {
        jfree(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static void skip_ws(jparser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static int hex4(const char *s, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *dst, unsigned cp) {
    if (cp < 0x80) { dst[0] = (char)cp; return 1; }
    if (cp < 0x800) { dst[0] = (char)(0xC0 | cp >> 6); dst[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | cp >> 12); dst[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | cp >> 18); dst[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    dst[2] = (char)(0x80 | (cp >> 6 & 0x3F)); dst[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parses a string starting at the opening quote; returns a malloc'ed UTF-8 copy or NULL. */
static char *parse_string(jparser *ps) {
    if (ps->p >= ps->end || *ps->p != '"') return NULL;
    ps->p++;
    const char *start = ps->p;
    while (ps->p < ps->end && *ps->p != '"') ps->p += (*ps->p == '\\') ? 2 : 1;
    if (ps->p >= ps->end) return NULL;
    char *out = xrealloc(NULL, (size_t)(ps->p - start) + 1); /* decoding never grows */
    size_t n = 0;
    for (const char *s = start; s < ps->p; s++) {
        if (*s != '\\') { out[n++] = *s; continue; }
        s++;
        switch (*s) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (ps->p - s < 5 || hex4(s + 1, &cp)) { free(out); return NULL; }
            s += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && ps->p - s >= 7 && s[1] == '\\' && s[2] == 'u'
                && !hex4(s + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                s += 6;
            }
            n += put_utf8(out + n, cp);
            break;
        }
        default: free(out); return NULL;
        }
    }
    out[n] = '\0';
    ps->p++; /* closing quote */
    return out;
}

static jval *parse_value(jparser *ps);

static jval *new_val(enum jtype t) {
    jval *v = xrealloc(NULL, sizeof *v);
    memset(v, 0, sizeof *v);
    v->type = t;
    return v;
}

static jval *parse_container(jparser *ps, int object) {
    jval *v = new_val(object ? J_OBJ : J_ARR);
    size_t cap = 0;
    char close = object ? '}' : ']';
    ps->p++; /* [ or { */
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) { ps->p++; return v; }
    for (;;) {
        char *key = NULL;
        if (object) {
            skip_ws(ps);
            if (!(key = parse_string(ps))) goto fail;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') { free(key); goto fail; }
            ps->p++;
        }
        jval *item = parse_value(ps);
        if (!item) { free(key); goto fail; }
        if (v->len == cap) {
            cap = cap ? 2 * cap : 8;
            v->items = xrealloc(v->items, cap * sizeof *v->items);
            if (object) v->keys = xrealloc(v->keys, cap * sizeof *v->keys);
        }
        v->items[v->len] = item;
        if (object) v->keys[v->len] = key;
        v->len++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
        if (ps->p < ps->end && *ps->p == close) { ps->p++; return v; }
        goto fail;
    }
fail:
    jfree(v);
    return NULL;
}

static jval *parse_value(jparser *ps) {
    skip_ws(ps);
    if (ps->p >= ps->end || ++ps->depth > MAX_DEPTH) return NULL;
    jval *v = NULL;
    char c = *ps->p;
    if (c == '{' || c == '[') {
        v = parse_container(ps, c == '{');
    } else if (c == '"') {
        char *s = parse_string(ps);
        if (s) { v = new_val(J_STR); v->str = s; }
    } else if (c == 't' && ps->end - ps->p >= 4 && !memcmp(ps->p, "true", 4)) {
        v = new_val(J_BOOL); v->num = 1; ps->p += 4;
    } else if (c == 'f' && ps->end - ps->p >= 5 && !memcmp(ps->p, "false", 5)) {
        v = new_val(J_BOOL); ps->p += 5;
    } else if (c == 'n' && ps->end - ps->p >= 4 && !memcmp(ps->p, "null", 4)) {
        v = new_val(J_NULL); ps->p += 4;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        char tmp[64];
        size_t n = 0;
        while (ps->p < ps->end && n < sizeof tmp - 1 && strchr("+-0123456789.eE", *ps->p)) tmp[n++] = *ps->p++;
        tmp[n] = '\0';
        char *endp;
        double d = strtod(tmp, &endp);
        if (endp != tmp + n) return NULL;
        v = new_val(J_NUM); v->num = d;
    }
    ps->depth--;
    return v;
}

/* The whole line as one JSON value (NULL if it is not exactly one). */
static jval *jparse(const char *text, size_t len) {
    jparser ps = {text, text + len, 0};
    jval *v = parse_value(&ps);
    skip_ws(&ps);
    if (v && ps.p != ps.end) { jfree(v); return NULL; }
    return v;
}

static jval *jget(const jval *obj, const char *key) {
    if (!obj || obj->type != J_OBJ) return NULL;
    for (size_t i = 0; i < obj->len; i++)
        if (!strcmp(obj->keys[i], key)) return obj->items[i];
    return NULL;
}

static const char *jstr(const jval *v) { return v && v->type == J_STR ? v->str : NULL; }

/* ------------------------------------------------------------------ output */

typedef struct {
    char *data;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap) b->cap = b->cap ? 2 * b->cap : 256;
        b->data = xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void sb_json_string(sbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { sb_put(b, "\\", 1); sb_put(b, (const char *)&c, 1); }
        else if (c < 0x20) sb_printf(b, "\\u%04x", c);
        else sb_put(b, (const char *)&c, 1);
    }
    sb_put(b, "\"", 1);
}

/* Writes a JSON value back (enough for what a bot answers: strings, numbers, arrays). */
static void sb_json(sbuf *b, const jval *v) {
    switch (v->type) {
    case J_STR: sb_json_string(b, v->str); break;
    case J_NUM: sb_printf(b, "%.0f", v->num); break;
    case J_BOOL: sb_put(b, v->num ? "true" : "false", v->num ? 4 : 5); break;
    case J_NULL: sb_put(b, "null", 4); break;
    case J_ARR:
    case J_OBJ:
        sb_put(b, v->type == J_ARR ? "[" : "{", 1);
        for (size_t i = 0; i < v->len; i++) {
            if (i) sb_put(b, ",", 1);
            if (v->type == J_OBJ) { sb_json_string(b, v->keys[i]); sb_put(b, ":", 1); }
            sb_json(b, v->items[i]);
        }
        sb_put(b, v->type == J_ARR ? "]" : "}", 1);
        break;
    }
}

static int out_fd = -1;

/* Sends one line (adds the newline); returns -1 if the peer is gone. */
static int send_line(sbuf *b) {
    sb_put(b, "\n", 1);
    size_t off = 0;
    while (off < b->len) {
        ssize_t n = write(out_fd, b->data + off, b->len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        off += (size_t)n;
    }
    return 0;
}

/* ------------------------------------------------------------------ strategy */

/* Rank of a card in the game's order, higher is better; -1 for anything else. */
static int card_power(const char *card, int piquet) {
    static const char *ecarte = "789TAJQK", *piq = "6789TJQKA";
    if (!card || strlen(card) != 2) return -1;
    const char *order = piquet ? piq : ecarte;
    const char *at = strchr(order, card[0]);
    return at ? (int)(at - order) : -1;
}

static int is_low(const char *card) { return card && strchr("6789", card[0]) != NULL; }

/* The compact discard: cards below the ten, lowest first, up to max; at least min. */
static void compact_discard(sbuf *b, const jval *choose, int piquet) {
    const jval *from = jget(choose, "from"), *jmin = jget(choose, "min"), *jmax = jget(choose, "max");
    size_t n = from && from->type == J_ARR ? from->len : 0;
    size_t lo = jmin && jmin->type == J_NUM && jmin->num > 0 ? (size_t)jmin->num : 0;
    size_t hi = jmax && jmax->type == J_NUM && jmax->num > 0 ? (size_t)jmax->num : 0;
    if (hi > n) hi = n;
    if (lo > hi) lo = hi;
    /* order the cards of `from` by power, lowest first (selection: n is at most 12) */
    size_t order[64];
    size_t m = n < 64 ? n : 64;
    for (size_t i = 0; i < m; i++) order[i] = i;
    for (size_t i = 0; i < m; i++)
        for (size_t j = i + 1; j < m; j++)
            if (card_power(jstr(from->items[order[j]]), piquet) < card_power(jstr(from->items[order[i]]), piquet)) {
                size_t t = order[i]; order[i] = order[j]; order[j] = t;
            }
    size_t take = 0;
    while (take < hi && take < m && is_low(jstr(from->items[order[take]]))) take++;
    if (take < lo) take = lo;
    sb_put(b, "[", 1);
    for (size_t i = 0; i < take; i++) {
        if (i) sb_put(b, ",", 1);
        sb_json(b, from->items[order[i]]);
    }
    sb_put(b, "]", 1);
}

/* Appends the chosen action for one request to b; returns -1 if the request is unusable. */
static int decide(sbuf *b, const jval *req) {
    const jval *legal = jget(req, "legal");
    const char *decision = jstr(jget(req, "decision"));
    const char *game = jstr(jget(jget(req, "state"), "game"));
    int piquet = game && !strcmp(game, "piquet");
    if (legal && legal->type == J_OBJ && jget(legal, "choose")) {
        compact_discard(b, jget(legal, "choose"), piquet);
        return 0;
    }
    if (!legal || legal->type != J_ARR || legal->len == 0) return -1;
    const jval *best = legal->items[0];
    if (decision && !strcmp(decision, "expose")) {
        /* keep the rest of the talon hidden: exposing it shows the opponent cards too */
        for (size_t i = 0; i < legal->len; i++)
            if (jstr(legal->items[i]) && !strcmp(jstr(legal->items[i]), "keep")) best = legal->items[i];
    }
    if (decision && !strcmp(decision, "play")) {
        for (size_t i = 1; i < legal->len; i++)
            if (card_power(jstr(legal->items[i]), piquet) > card_power(jstr(best), piquet)) best = legal->items[i];
    }
    sb_json(b, best);
    return 0;
}

/* ------------------------------------------------------------------ transport and main loop */

static int connect_tcp(const char *host, const char *port) {
    for (int attempt = 0; attempt < 20; attempt++) {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(host, port, &hints, &res) == 0) {
            for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
                int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
                if (fd < 0) continue;
                if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) { freeaddrinfo(res); return fd; }
                close(fd);
            }
            freeaddrinfo(res);
        }
        fprintf(stderr, "c_bot: cannot connect to %s:%s yet, retrying\n", host, port);
        struct timespec pause = {0, 250 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return -1;
}

static const char *env_or(const char *name, const char *fallback) {
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

/* Handles one line; returns 1 to stop (goodbye or a dead peer), 0 to go on. */
static int handle_line(const char *line, size_t len) {
    jval *msg = jparse(line, len);
    const char *type = jstr(jget(msg, "type"));
    int stop = 0;
    if (!type) {
        fprintf(stderr, "c_bot: line skipped (not a JSON object with a type), %zu bytes\n", len);
    } else if (!strcmp(type, "request")) {
        const jval *id = jget(msg, "id");
        sbuf b = {0};
        sb_printf(&b, "{\"type\":\"action\",\"id\":%.0f,\"action\":", id && id->type == J_NUM ? id->num : 0.0);
        if (decide(&b, msg) == 0) {
            sb_put(&b, "}", 1);
            if (send_line(&b) < 0) stop = 1;
        } else {
            fprintf(stderr, "c_bot: request without legal actions skipped\n");
        }
        free(b.data);
    } else if (!strcmp(type, "error")) {
        fprintf(stderr, "c_bot: server error: %.*s\n", (int)(len < 2000 ? len : 2000), line);
    } else if (!strcmp(type, "goodbye")) {
        stop = 1;
    }
    jfree(msg);
    return stop;
}

int main(void) {
    const char *name = env_or("ARENA_NAME", "c_bot");
    const char *token = env_or("ARENA_TOKEN", "");
    int in_fd;
    const char *transport = getenv("ARENA_TRANSPORT");
    if (transport && !strcmp(transport, "stdio")) {
        in_fd = 0;
        out_fd = 1;
    } else {
        const char *host = env_or("ARENA_HOST", "127.0.0.1"), *port = env_or("ARENA_PORT", "7000");
        const char *tls = env_or("ARENA_TLS", "");
        if (!strncmp(host, "tls://", 6) || !strcmp(tls, "1") || !strcmp(tls, "true") || !strcmp(tls, "yes") ||
            !strcmp(tls, "on")) {
            /* never send the token in clear to a server that asked for TLS */
            fprintf(stderr, "c_bot: no TLS in this bot (libc only): run a TLS client such as stunnel beside it and "
                            "give the bot its local port, in plain (docs/bots.md, \"TLS\")\n");
            return 2;
        }
        in_fd = out_fd = connect_tcp(host, port);
        if (in_fd < 0) {
            fprintf(stderr, "c_bot: cannot connect to %s:%s\n", host, port);
            return 1;
        }
    }
    sbuf hello = {0};
    sb_put(&hello, "{\"type\":\"hello\",\"name\":", 23);
    sb_json_string(&hello, name);
    sb_put(&hello, ",\"token\":", 9);
    sb_json_string(&hello, token);
    const char *rest = ",\"protocol\":1,\"role\":\"bot\",\"legal\":\"compact\"}";
    sb_put(&hello, rest, strlen(rest));
    if (send_line(&hello) < 0) return 1;
    free(hello.data);

    /* the read buffer grows with the longest line: no line is ever too long */
    size_t cap = 1 << 16, len = 0, scanned = 0;
    char *buf = xrealloc(NULL, cap);
    for (;;) {
        if (len == cap) { cap *= 2; buf = xrealloc(buf, cap); }
        ssize_t n = read(in_fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* end of stream: the server closed the connection */
        len += (size_t)n;
        size_t start = 0;
        for (size_t i = scanned; i < len; i++) {
            if (buf[i] != '\n') continue;
            size_t end = i;
            if (end > start && buf[end - 1] == '\r') end--;
            if (end > start && handle_line(buf + start, end - start)) { free(buf); return 0; }
            start = i + 1;
        }
        memmove(buf, buf + start, len - start);
        len -= start;
        scanned = len;
    }
    free(buf);
    return 0;
}
