#!/usr/bin/env node
// Highcard sample bot for the Écarté arena (Node.js 20, no npm packages).
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
// Strategy: with two trumps or more it stands pat ("play" as elder, "refuse" as dealer); with
// fewer it proposes and accepts, throwing its lowest non-trump card (or else the smallest legal
// discard); always announces the king of trumps; always plays its highest legal card, any trump
// counting above any plain card.
//
// Piquet (state.game === "piquet"): throws its lowest cards, as many as it may; always looks at
// the talon cards it left; keeps the rest of the talon hidden; always plays its highest legal
// card (A K Q J T 9 8 7 6).

"use strict";
const fs = require("fs");
const net = require("net");
const tls = require("tls");

const RANKS = "789TAJQK"; // low to high: K Q J A T 9 8 7 is the order in every suit

function power(card, trump) {
  return RANKS.indexOf(card[0]) + (card[1] === trump ? RANKS.length : 0);
}

function trumps(state) {
  return (state.hand || []).filter((c) => c[1] === state.trump).length;
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
  const options = legal.filter(Array.isArray);
  const plain = (state.hand || []).filter((c) => c[1] !== trump);
  if (plain.length > 0) {
    const lowest = plain.reduce((a, b) => (power(b, trump) < power(a, trump) ? b : a));
    const single = options.find((opt) => opt.length === 1 && opt[0] === lowest);
    if (single) return single;
  }
  return options.reduce((a, b) => (b.length < a.length ? b : a));
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

// Highcard throws its lowest cards, as many as it may: it wants new (higher) cards.
function pqDiscard(state, legal) {
  const [, most] = pqSizes(legal);
  const hand = [...(state.hand || [])].sort((a, b) => pqPower(a) - pqPower(b));
  return pqDiscardOption(hand.slice(0, most), legal);
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
    case "play": {
      const cards = legal.filter((c) => typeof c === "string");
      return cards.reduce((a, b) => (pqPower(b) > pqPower(a) ? b : a));
    }
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
      return trumps(state) >= 2 ? "play" : "propose";
    case "respond":
      return trumps(state) >= 2 ? "refuse" : "accept";
    case "king":
      return "announce";
    case "discard":
      return chooseDiscard(state, legal);
    case "play": {
      const cards = legal.filter((c) => typeof c === "string");
      return cards.reduce((a, b) => (power(b, state.trump) > power(a, state.trump) ? b : a));
    }
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
  const name = process.env.ARENA_NAME || "highcard";
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
      console.error(`highcard: bad line skipped: ${line.slice(0, 200)}`);
      return;
    }
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "request") {
      if (msg.legal && typeof msg.legal === "object" && msg.legal.choose) msg.legal = expandChoose(msg.legal.choose);
      const legal = msg.legal;
      if (!Array.isArray(legal) || legal.length === 0) {
        console.error(`highcard: request without legal actions: ${line.slice(0, 200)}`);
        return;
      }
      let action;
      try {
        action = decide(msg);
      } catch (err) {
        console.error(`highcard: strategy failed (${err}), playing legal[0]`);
      }
      if (action === undefined || !isLegal(action, legal)) action = legal[0];
      send({ type: "action", id: msg.id, action });
    } else if (msg.type === "error") {
      console.error(`highcard: server error: ${line}`);
    } else if (msg.type === "goodbye") {
      done = true;
      sock.end(() => process.exit(0)); // exit once our last lines are flushed
      setTimeout(() => process.exit(0), 1000).unref();
    }
  }
}

main();
