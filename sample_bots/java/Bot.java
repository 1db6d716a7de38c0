/*
 * java_bot: a sample bot in Java (the JDK only: no library, its own small JSON reader) for the
 * Ecarte and Piquet arena. Started as `java -jar bot.jar`, with no JVM flag.
 *
 * Protocol handling (docs/protocol.md)
 *   Reads ARENA_HOST, ARENA_PORT, ARENA_NAME, ARENA_TOKEN and ARENA_TRANSPORT from the
 *   environment. With ARENA_TRANSPORT=stdio (a sandboxed bot, section 3.4) it speaks over
 *   stdin/stdout; otherwise it connects over TCP (retrying while the server starts). It sends
 *   `hello` asking for the compact legal form (section 8.13), then reads newline-ended JSON lines
 *   of any length (BufferedReader.readLine grows as needed: a full-form Piquet discard request is
 *   over 100 KB). Every `request` is answered with one `action` carrying its id; `error` lines
 *   go to stderr and the bot goes on; it exits with status 0 on `goodbye` or at the end of the
 *   stream. Nothing but protocol lines is ever written to stdout: debugging goes to System.err.
 *
 * Strategy (both games), as sample_bots/c_bot.c
 *   discard  compact form: every card below the ten (6 7 8 9), lowest first, as many as `max`
 *            allows; if that is fewer than `min`, the lowest cards of the hand. A full list
 *            (a server that ignored the request for the compact form): its first element.
 *   play     the highest legal card in the order of the game (Ecarte K Q J A T 9 8 7,
 *            Piquet A K Q J T 9 8 7 6).
 *   expose   keep (the rest of the talon stays hidden).
 *   others   the first legal action: propose, accept, announce, look, the first bid.
 *
 * Build: `make sample_bots/java/bot.jar` (javac --release 11, then jar with Main-Class: Bot).
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public final class Bot {

    // ------------------------------------------------------------------ a small JSON reader

    /** Parses one JSON text into Map (objects), List, String, Long or Double, Boolean, or null. */
    static final class Json {
        private final String s;
        private int i;
        private int depth;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String text) {
            Json p = new Json(text);
            Object v = p.value();
            p.ws();
            if (p.i != p.s.length()) throw new IllegalArgumentException("trailing characters at " + p.i);
            return v;
        }

        private void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) i++;
        }

        private IllegalArgumentException bad(String what) {
            return new IllegalArgumentException(what + " at " + i);
        }

        private Object value() {
            ws();
            if (i >= s.length()) throw bad("unexpected end");
            if (++depth > 64) throw bad("too deep");
            Object v;
            char c = s.charAt(i);
            if (c == '{') v = object();
            else if (c == '[') v = array();
            else if (c == '"') v = string();
            else if (s.startsWith("true", i)) { i += 4; v = Boolean.TRUE; }
            else if (s.startsWith("false", i)) { i += 5; v = Boolean.FALSE; }
            else if (s.startsWith("null", i)) { i += 4; v = null; }
            else v = number();
            depth--;
            return v;
        }

        private Map<String, Object> object() {
            Map<String, Object> out = new LinkedHashMap<>();
            i++;
            ws();
            if (i < s.length() && s.charAt(i) == '}') { i++; return out; }
            while (true) {
                ws();
                if (i >= s.length() || s.charAt(i) != '"') throw bad("expected a key");
                String key = string();
                ws();
                if (i >= s.length() || s.charAt(i) != ':') throw bad("expected ':'");
                i++;
                out.put(key, value());
                ws();
                if (i < s.length() && s.charAt(i) == ',') { i++; continue; }
                if (i < s.length() && s.charAt(i) == '}') { i++; return out; }
                throw bad("expected ',' or '}'");
            }
        }

        private List<Object> array() {
            List<Object> out = new ArrayList<>();
            i++;
            ws();
            if (i < s.length() && s.charAt(i) == ']') { i++; return out; }
            while (true) {
                out.add(value());
                ws();
                if (i < s.length() && s.charAt(i) == ',') { i++; continue; }
                if (i < s.length() && s.charAt(i) == ']') { i++; return out; }
                throw bad("expected ',' or ']'");
            }
        }

        private String string() {
            StringBuilder b = new StringBuilder();
            i++; // opening quote
            while (i < s.length()) {
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c != '\\') { b.append(c); continue; }
                if (i >= s.length()) break;
                char e = s.charAt(i++);
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) throw bad("short \\u escape");
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); // surrogates pair up as chars
                        i += 4;
                        break;
                    default: throw bad("bad escape");
                }
            }
            throw bad("unterminated string");
        }

        private Object number() {
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String t = s.substring(start, i);
            if (t.isEmpty()) throw bad("unexpected character");
            if (t.indexOf('.') < 0 && t.indexOf('e') < 0 && t.indexOf('E') < 0) {
                try {
                    return Long.parseLong(t);
                } catch (NumberFormatException tooLong) {
                    // falls through to a double
                }
            }
            return Double.parseDouble(t);
        }

        /** Writes a value back: enough for what a bot sends (strings, integers, lists, objects). */
        static void write(StringBuilder b, Object v) {
            if (v == null) b.append("null");
            else if (v instanceof String) quote(b, (String) v);
            else if (v instanceof Boolean || v instanceof Long) b.append(v);
            else if (v instanceof Double) {
                double d = (Double) v;
                if (d == Math.rint(d) && !Double.isInfinite(d)) b.append((long) d); else b.append(d);
            } else if (v instanceof List) {
                b.append('[');
                boolean first = true;
                for (Object item : (List<?>) v) {
                    if (!first) b.append(',');
                    first = false;
                    write(b, item);
                }
                b.append(']');
            } else if (v instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (!first) b.append(',');
                    first = false;
                    quote(b, String.valueOf(e.getKey()));
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else throw new IllegalArgumentException("cannot write " + v.getClass());
        }

        static void quote(StringBuilder b, String s) {
            b.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            b.append('"');
        }
    }

    // ------------------------------------------------------------------ strategy

    private static final String ECARTE_ORDER = "789TAJQK";
    private static final String PIQUET_ORDER = "6789TJQKA";

    /** Rank of a card in the game's order, higher is better; -1 for anything else. */
    static int power(Object card, boolean piquet) {
        if (!(card instanceof String) || ((String) card).length() != 2) return -1;
        return (piquet ? PIQUET_ORDER : ECARTE_ORDER).indexOf(((String) card).charAt(0));
    }

    static boolean low(Object card) {
        return card instanceof String && !((String) card).isEmpty() && "6789".indexOf(((String) card).charAt(0)) >= 0;
    }

    static int intOf(Object v, int fallback) {
        return v instanceof Number ? ((Number) v).intValue() : fallback;
    }

    /** The compact discard: the cards below the ten, lowest first, up to max; at least min. */
    static List<Object> compactDiscard(Map<?, ?> choose, boolean piquet) {
        List<Object> from = choose.get("from") instanceof List ? new ArrayList<>((List<?>) choose.get("from"))
                                                               : new ArrayList<>();
        int hi = Math.min(Math.max(intOf(choose.get("max"), 0), 0), from.size());
        int lo = Math.min(Math.max(intOf(choose.get("min"), 0), 0), hi);
        from.sort((a, b) -> Integer.compare(power(a, piquet), power(b, piquet)));
        int take = 0;
        while (take < hi && low(from.get(take))) take++;
        return new ArrayList<>(from.subList(0, Math.max(take, lo)));
    }

    /** The action for one request, or null if the request carries no usable legal actions. */
    static Object decide(Map<?, ?> request) {
        Object legal = request.get("legal");
        Object decision = request.get("decision");
        Object state = request.get("state");
        boolean piquet = state instanceof Map && "piquet".equals(((Map<?, ?>) state).get("game"));
        if (legal instanceof Map && ((Map<?, ?>) legal).get("choose") instanceof Map) {
            return compactDiscard((Map<?, ?>) ((Map<?, ?>) legal).get("choose"), piquet);
        }
        if (!(legal instanceof List) || ((List<?>) legal).isEmpty()) return null;
        List<?> options = (List<?>) legal;
        Object best = options.get(0);
        if ("expose".equals(decision) && options.contains("keep")) best = "keep";
        if ("play".equals(decision)) {
            for (Object card : options) if (power(card, piquet) > power(best, piquet)) best = card;
        }
        return best;
    }

    // ------------------------------------------------------------------ transport and main loop

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? fallback : v;
    }

    private static Socket connect(String host, int port) throws IOException, InterruptedException {
        for (int attempt = 0; ; attempt++) {
            try {
                Socket socket = new Socket(host, port);
                socket.setTcpNoDelay(true);
                return socket;
            } catch (IOException e) {
                if (attempt >= 19) throw e;
                System.err.println("java_bot: cannot connect to " + host + ":" + port + " yet, retrying");
                Thread.sleep(250);
            }
        }
    }

    private static void send(OutputStream out, StringBuilder line) throws IOException {
        line.append('\n');
        out.write(line.toString().getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    public static void main(String[] args) throws Exception {
        String name = env("ARENA_NAME", "java_bot");
        String token = env("ARENA_TOKEN", "");
        InputStream in;
        OutputStream out;
        if ("stdio".equals(System.getenv("ARENA_TRANSPORT"))) {
            in = new FileInputStream(FileDescriptor.in);
            out = new FileOutputStream(FileDescriptor.out); // not System.out: nothing else may reach stdout
        } else {
            String host = env("ARENA_HOST", "127.0.0.1");
            Socket socket = connect(host, Integer.parseInt(env("ARENA_PORT", "7000")));
            in = socket.getInputStream();
            out = socket.getOutputStream();
        }
        StringBuilder hello = new StringBuilder("{\"type\":\"hello\",\"name\":");
        Json.quote(hello, name);
        hello.append(",\"token\":");
        Json.quote(hello, token);
        hello.append(",\"protocol\":1,\"role\":\"bot\",\"legal\":\"compact\"}");
        send(out, hello);

        BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = reader.readLine()) != null) {
            if (line.isEmpty()) continue;
            Object parsed;
            try {
                parsed = Json.parse(line);
            } catch (RuntimeException e) {
                System.err.println("java_bot: line skipped (" + e.getMessage() + "), " + line.length() + " characters");
                continue;
            }
            if (!(parsed instanceof Map)) continue;
            Map<?, ?> msg = (Map<?, ?>) parsed;
            Object type = msg.get("type");
            if ("request".equals(type)) {
                Object action = decide(msg);
                if (action == null) {
                    System.err.println("java_bot: request without legal actions skipped");
                    continue;
                }
                StringBuilder answer = new StringBuilder("{\"type\":\"action\",\"id\":");
                Json.write(answer, msg.get("id"));
                answer.append(",\"action\":");
                Json.write(answer, action);
                answer.append('}');
                try {
                    send(out, answer);
                } catch (IOException gone) {
                    return; // the server closed the connection
                }
            } else if ("error".equals(type)) {
                System.err.println("java_bot: server error: " + (line.length() > 2000 ? line.substring(0, 2000) : line));
            } else if ("goodbye".equals(type)) {
                return;
            }
        }
    }
}
