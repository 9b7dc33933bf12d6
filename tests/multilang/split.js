// A split-sentence bolt in Node.js speaking Storm's multilang protocol directly (a test fixture):
// JSON messages each followed by a line "end"; the handshake writes the pid file and answers
// {"pid"}; heartbeats are answered with sync; every tuple is split into words emitted anchored
// to it (no task ids asked for), then acked. A sentence "fail me" is failed instead.
"use strict";
const fs = require("fs");
const path = require("path");

let buffer = "";
let lines = [];
let handshaken = false;

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\nend\n");
}

function handle(msg) {
  if (!handshaken) {
    handshaken = true;
    fs.closeSync(fs.openSync(path.join(msg.pidDir, String(process.pid)), "w"));
    send({ pid: process.pid });
    send({ command: "log", msg: "node split bolt ready, task " + msg.context.taskid, level: 2 });
    return;
  }
  if (msg.stream === "__heartbeat" && msg.task === -1) {
    send({ command: "sync" });
    return;
  }
  const sentence = msg.tuple[0];
  if (sentence === "fail me") {
    send({ command: "fail", id: msg.id });
    return;
  }
  for (const word of sentence.split(" ")) {
    send({ command: "emit", anchors: [msg.id], tuple: [word], need_task_ids: false });
  }
  send({ command: "ack", id: msg.id });
}

process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let nl;
  while ((nl = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    if (line === "end") {
      handle(JSON.parse(lines.join("\n")));
      lines = [];
    } else {
      lines.push(line);
    }
  }
});
process.stdin.on("end", () => process.exit(0));
