// Subscription delivery latency: from a mutation's HTTP answer to each subscriber's event, with
// N subscribers in this one Node process (one connection each) and W farms created one after
// another, over graphql-transport-ws (graphql-ws's client) or AppSync's real-time protocol
// (`appsync`: /graphql/realtime, as aws-amplify speaks it).
//
//   node clients/latency.mjs http://127.0.0.1:8080/graphql <subscribers> <writes> [graphql-ws|appsync]
//
// Prints one JSON line: protocol, subscribers, writes, events received, p50/p99/max in ms. A
// negative delay (the event came before the answer) counts as 0.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { realtimeSocket, startMessage } from './appsync.mjs';

const [url, subscribersArg, writesArg, protocol = 'graphql-ws'] = process.argv.slice(2);
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

/** One AppSync real-time connection with one subscription; `onEvent` gets each event's data. */
function appsyncSubscription(graphqlUrl, query, onEvent) {
  const socket = new WebSocket(...realtimeSocket(graphqlUrl));
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init' })));
  socket.on('message', (text) => {
    const message = JSON.parse(String(text));
    if (message.type === 'connection_ack') {
      socket.send(startMessage(graphqlUrl, '1', query));
    } else if (message.type === 'data') {
      onEvent(message.payload.data);
    } else if (message.type === 'error' || message.type === 'connection_error') {
      console.error(JSON.stringify(message));
      process.exit(1);
    }
  });
  return { dispose: () => socket.close() };
}

const acked = new Map(); // farm name → when its mutation was answered
const received = []; // [farm name, when]
let pending = subscribers * writes;
let allReceived;
const done = new Promise((resolve) => {
  allReceived = resolve;
});

const clients = [];
const QUERY = 'subscription { onCreateFarm { name } }';
const onEvent = (data) => {
  received.push([data.onCreateFarm.name, performance.now()]);
  pending -= 1;
  if (pending === 0) allReceived();
};
for (let i = 0; i < subscribers && protocol === 'appsync'; i += 1) {
  clients.push(appsyncSubscription(url, QUERY, onEvent));
}
for (let i = 0; i < subscribers && protocol !== 'appsync'; i += 1) {
  const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
  clients.push(client);
  client.subscribe(
    { query: QUERY },
    {
      next: (event) => onEvent(event.data),
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
    protocol,
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
