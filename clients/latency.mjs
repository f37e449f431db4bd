// Subscription delivery latency: from a mutation's HTTP answer to each subscriber's event, with
// N graphql-ws subscribers in this one Node process and W farms created one after another.
//
//   node clients/latency.mjs http://127.0.0.1:8080/graphql <subscribers> <writes>
//
// Prints one JSON line: subscribers, writes, events received, p50/p99/max in ms. A negative
// delay (the event came before the answer) counts as 0.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [url, subscribersArg, writesArg] = process.argv.slice(2);
const subscribers = Number(subscribersArg);
const writes = Number(writesArg);
const wsUrl = url.replace(/^http/, 'ws');

async function subscriptionsOpen(count) {
  const wanted = `tablegraph_subscriptions ${count}`;
  for (;;) {
    const text = await (await fetch(url.replace(/\/graphql$/, '/metrics'))).text();
    if (text.split('\n').includes(wanted)) return;
  }
}

const acked = new Map(); // farm name → when its mutation was answered
const received = []; // [farm name, when]
let pending = subscribers * writes;
let allReceived;
const done = new Promise((resolve) => {
  allReceived = resolve;
});

const clients = [];
for (let i = 0; i < subscribers; i += 1) {
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
  clients.push(client);
  client.subscribe(
    { query: 'subscription { onCreateFarm { name } }' },
    {
      next: (event) => {
        received.push([event.data.onCreateFarm.name, performance.now()]);
        pending -= 1;
        if (pending === 0) allReceived();
      },
      error: (error) => {
        console.error(error);
        process.exit(1);
      },
      complete: () => {},
    },
  );
}
await subscriptionsOpen(subscribers);

const run = Date.now();
for (let i = 0; i < writes; i += 1) {
  const name = `Latency ${run} ${i}`;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'mutation($n: String!) { createFarm(input: { name: $n }) { id } }',
      variables: { n: name },
    }),
  });
  await response.json();
  acked.set(name, performance.now());
}
await done;
const delays = received
  .map(([name, at]) => Math.max(0, at - acked.get(name)))
  .sort((a, b) => a - b);
const at = (q) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))];
console.log(
  JSON.stringify({
    subscribers,
    writes,
    events: delays.length,
    p50_ms: Number(at(0.5).toFixed(1)),
    p99_ms: Number(at(0.99).toFixed(1)),
    max_ms: Number(delays[delays.length - 1].toFixed(1)),
  }),
);
for (const client of clients) await client.dispose();
process.exit(0);
