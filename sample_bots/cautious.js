#!/usr/bin/env node
// Cautious sample bot for the Écarté arena (Node.js 20, no npm packages).
//
// Protocol handling: reads ARENA_HOST, ARENA_PORT, ARENA_NAME and ARENA_TOKEN from the
// environment, connects over TCP (TLS with ARENA_TLS=1 or ARENA_HOST=tls://host:port, the CA
// from ARENA_TLS_CA) and sends a "hello" line. Incoming data is decoded as UTF-8
// and buffered; only complete "\n"-terminated lines are parsed, so a message split over several
// TCP packets, or several messages in one packet, are both handled. Every "request" gets one
// "action" line with the same id, always an element of "legal" (legal[0] if anything goes
// wrong). "error" messages are printed to stderr, everything else is ignored. The bot exits
// with status 0 on "goodbye" or when the server closes the connection.
//
// Strategy: always proposes and always accepts (so it never risks the refusal penalty);
// discards every card that is neither a trump nor a king (at least one card, and only a set
// that "legal" allows); always announces the king of trumps; when following it plays the lowest
// card that wins the trick, else its lowest card; when leading it plays its lowest card.
//
// Piquet (state.game === "piquet"): throws its cards below the ten, lowest first (at least one
// as elder, at most what the talon allows); always looks at the talon cards it left; keeps the
// rest of the talon hidden; following, plays the lowest card of the suit led that wins the
// trick, else its lowest legal card; leading, its lowest card.

"use strict";
const fs = require("fs");
const net = require("net");
const tls = require("tls");

const RANKS = "789TAJQK"; // low to high: K Q J A T 9 8 7 is the order in every suit

function power(card, trump) {
  return RANKS.indexOf(card[0]) + (card[1] === trump ? RANKS.length : 0);
}

function lowest(cards, trump) {
  return cards.reduce((a, b) => (power(b, trump) < power(a, trump) ? b : a));
}

// True if `card`, played after `best`, takes the trick from it.
function beats(card, best, trump) {
  if (card[1] === best[1]) return RANKS.indexOf(card[0]) > RANKS.indexOf(best[0]);
  return card[1] === trump;
}

// The compact legal form (docs/protocol.md §8.13), asked for at hello: a discard request's
// "legal" is {"choose": {"from": cards, "min": a, "max": b}}, standing for every set of a to b
// cards of "from" (any order). This bot keeps its list-based strategy and expands the
// description itself, in the order the full form would list it (by size, then hand order).
function expandChoose(c) {
  const out = [];
  const pick = (start, k, acc) => {
    if (acc.length === k) {
      out.push(acc.slice());
      return;
    }
    for (let i = start; i < c.from.length; i++) {
      acc.push(c.from[i]);
      pick(i + 1, k, acc);
      acc.pop();
    }
  };
  for (let k = c.min; k <= c.max; k++) pick(0, k, []);
  return out;
}

function isLegal(action, legal) {
  return legal.some((opt) => JSON.stringify(opt) === JSON.stringify(action));
}

function chooseDiscard(state, legal) {
  const trump = state.trump;
  const hand = state.hand || [];
  const options = legal.filter(Array.isArray);
  let want = hand.filter((c) => c[1] !== trump && c[0] !== "K");
  if (want.length === 0 && !options.some((opt) => opt.length === 0)) want = [lowest(hand, trump)];
  // The legal set closest to `want`: fewest differing cards, then the weakest cards thrown.
  const cost = (opt) => {
    const diff = opt.filter((c) => !want.includes(c)).length + want.filter((c) => !opt.includes(c)).length;
    return diff * 1000 + opt.reduce((sum, c) => sum + power(c, trump), 0);
  };
  return options.reduce((a, b) => (cost(b) < cost(a) ? b : a));
}

function choosePlay(state, legal) {
  const trump = state.trump;
  const cards = legal.filter((c) => typeof c === "string");
  const table = (state.trick || []).map((t) => (t && typeof t === "object" ? t.card : t));
  if (table.length === 0) return lowest(cards, trump);
  let best = table[0];
  for (const card of table.slice(1)) if (beats(card, best, trump)) best = card;
  const winners = cards.filter((c) => beats(c, best, trump));
  return lowest(winners.length > 0 ? winners : cards, trump);
}

// --------------------------------------------------------------------------- Piquet
// piquet.md: high to low A K Q J T 9 8 7 (6), no trumps; follow suit if able, no need to win.

const PQ_RANKS = "6789TJQKA"; // low to high
const PQ_SUITS = "cdhs";

function pqPower(card) {
  return PQ_RANKS.indexOf(card[0]) * 4 + PQ_SUITS.indexOf(card[1]); // rank, then suit: a total order
}

function pqLowest(cards) {
  return cards.reduce((a, b) => (pqPower(b) < pqPower(a) ? b : a));
}

// The element of `legal` holding exactly the cards of `want` (legal lists them in hand order).
function pqDiscardOption(want, legal) {
  const key = (cards) => [...cards].sort().join(" ");
  const wanted = key(want);
  return legal.find((opt) => Array.isArray(opt) && key(opt) === wanted);
}

// Discard sizes `legal` allows: elder 1..his maximum, younger 0..the talon.
function pqSizes(legal) {
  const sizes = legal.filter(Array.isArray).map((opt) => opt.length);
  return [Math.min(...sizes), Math.max(...sizes)];
}

// Cautious throws only its low cards (below the ten), lowest first, as few as it must and as
// many as it may.
function pqDiscard(state, legal) {
  const [least, most] = pqSizes(legal);
  const hand = [...(state.hand || [])].sort((a, b) => pqPower(a) - pqPower(b));
  const low = hand.filter((c) => PQ_RANKS.indexOf(c[0]) < PQ_RANKS.indexOf("T")).length;
  return pqDiscardOption(hand.slice(0, Math.max(least, Math.min(low, most))), legal);
}

// Following: the lowest card of the suit led that wins the trick, else the lowest card it may
// play; leading: its lowest card.
function pqPlay(state, legal) {
  const cards = legal.filter((c) => typeof c === "string");
  const table = (state.trick || []).map((t) => (t && typeof t === "object" ? t.card : t));
  if (table.length === 0) return pqLowest(cards);
  const lead = table[0];
  const winners = cards.filter((c) => c[1] === lead[1] && PQ_RANKS.indexOf(c[0]) > PQ_RANKS.indexOf(lead[0]));
  return pqLowest(winners.length > 0 ? winners : cards);
}

function decidePiquet(msg) {
  const legal = msg.legal;
  const state = msg.state || {};
  switch (msg.decision) {
    case "discard":
      return pqDiscard(state, legal);
    case "look":
      return "look";
    case "expose":
      return "keep";
    case "play":
      return pqPlay(state, legal);
    default:
      return legal[0];
  }
}

function decide(msg) {
  const legal = msg.legal;
  const state = msg.state || {};
  if (state.game === "piquet") return decidePiquet(msg);
  switch (msg.decision) {
    case "propose":
      return "propose";
    case "respond":
      return "accept";
    case "king":
      return "announce";
    case "discard":
      return chooseDiscard(state, legal);
    case "play":
      return choosePlay(state, legal);
    default:
      return legal[0];
  }
}

function connectTls(host, port) {
  const caFile = process.env.ARENA_TLS_CA;
  let ca;
  try {
    ca = caFile ? fs.readFileSync(caFile) : undefined;
  } catch (err) {
    console.error(`bot: ARENA_TLS_CA=${caFile}: ${err.message}`);
    process.exit(1);
  }
  const servername = net.isIP(host) ? undefined : host; // an IP address is checked against the certificate's IPs
  return tls.connect({ host, port, servername, ca, minVersion: "TLSv1.2" });
}

function main() {
  let host = process.env.ARENA_HOST || "127.0.0.1";
  let port = parseInt(process.env.ARENA_PORT || "7000", 10);
  // TLS when ARENA_TLS is 1 (true, yes, on) or ARENA_HOST is tls://host[:port] (docs/protocol.md §2.1);
  // the server's certificate is checked against ARENA_TLS_CA (a PEM file), else the system's CAs
  let useTls = ["1", "true", "yes", "on"].includes((process.env.ARENA_TLS || "").trim().toLowerCase());
  const address = /^tls:\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?\/?$/.exec(host);
  if (address) {
    useTls = true;
    host = address[1].replace(/^\[|\]$/g, "");
    if (address[2]) port = parseInt(address[2], 10);
  }
  const name = process.env.ARENA_NAME || "cautious";
  const token = process.env.ARENA_TOKEN || "";
  // ARENA_TRANSPORT=stdio: the same protocol over stdin/stdout (sandboxed bots have no network)
  const stdio = process.env.ARENA_TRANSPORT === "stdio";
  const sock = stdio ? process.stdin : useTls ? connectTls(host, port) : net.createConnection({ host, port });
  const out = stdio ? process.stdout : sock;
  const send = (obj) => out.write(JSON.stringify(obj) + "\n");
  let buf = "";
  let connected = false;
  let done = false; // set on goodbye: ignore anything after it

  sock.setEncoding("utf8"); // decodes multi-byte characters split across packets correctly
  const hello = () => {
    connected = true;
    send({ type: "hello", name, token, protocol: 1, role: "bot", legal: "compact" });
  };
  if (stdio) hello();
  else sock.on(useTls ? "secureConnect" : "connect", hello); // never a token before TLS is up
  sock.on("data", (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line && !done) handleLine(line);
    }
  });
  sock.on("error", (err) => {
    console.error(`bot: connection error: ${err.message}`);
    if (!connected) process.exitCode = 1; // could not reach the server at all
  });
  sock.on(stdio ? "end" : "close", () => process.exit(process.exitCode || 0));

  function handleLine(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (err) {
      console.error(`cautious: bad line skipped: ${line.slice(0, 200)}`);
      return;
    }
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "request") {
      if (msg.legal && typeof msg.legal === "object" && msg.legal.choose) msg.legal = expandChoose(msg.legal.choose);
      const legal = msg.legal;
      if (!Array.isArray(legal) || legal.length === 0) {
        console.error(`cautious: request without legal actions: ${line.slice(0, 200)}`);
        return;
      }
      let action;
      try {
        action = decide(msg);
      } catch (err) {
        console.error(`cautious: strategy failed (${err}), playing legal[0]`);
      }
      if (action === undefined || !isLegal(action, legal)) action = legal[0];
      send({ type: "action", id: msg.id, action });
    } else if (msg.type === "error") {
      console.error(`cautious: server error: ${line}`);
    } else if (msg.type === "goodbye") {
      done = true;
      sock.end(() => process.exit(0)); // exit once our last lines are flushed
      setTimeout(() => process.exit(0), 1000).unref();
    }
  }
}

main();
