// Whether a write and its event cost more once the table's stream holds a long history: one
// graphql-ws subscriber on onCreateFarm; WINDOW farms created one after another, timed; FILL
// farms created by CONCURRENCY writers, not timed, until the subscriber has seen them all;
// WINDOW more, timed; then, after SETTLE seconds of nothing, WINDOW more, timed.
//
//   node clients/history.mjs URL <fill> [window] [concurrency] [settle] [reps] [batch]
//
// BATCH > 1 fills with createFarms of BATCH farms per call (one transaction each).
//
// Each timed point is REPS windows one after another (3 by default): a 2-core machine's
// windows of 1000 writes vary by a third between runs, so one window proves little.
//
// Why SETTLE: dynoxide 3.2 keeps every transaction's client token for 10 minutes and walks all
// of them on each transaction, so right after a fill a write also paid for the fill's tokens.
// tablegraph no longer sends tokens to its embedded store (src/store/client.rs), so SETTLE is 0
// by default; a store reached as an endpoint still gets them.
//
// Prints one JSON line per timed window: the farms written before it, the seconds idle before
// it, the write latency (the mutation's HTTP round trip) and the event delay (its answer → the
// subscriber's event), p50 and p99 in ms.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [
  url,
  fillArg,
  windowArg = '1000',
  concurrencyArg = '8',
  settleArg = '0',
  repsArg = '3',
  batchArg = '1',
] = process.argv.slice(2);
const fill = Number(fillArg);
const window = Number(windowArg);
const concurrency = Number(concurrencyArg);
const settle = Number(settleArg);
const reps = Number(repsArg);
const batch = Number(batchArg);
const run = Date.now();

let seen = 0;
const arrived = new Map(); // farm name → when its event came
let waiting = null; // [count, resolve]: resolves once `seen` reaches count

const client = createClient({ url: url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
client.subscribe(
  { query: 'subscription { onCreateFarm { name } }' },
  {
    next: (event) => {
      const name = event.data.onCreateFarm.name;
      if (name.startsWith('T ')) arrived.set(name, performance.now());
      seen += 1;
      if (waiting && seen >= waiting[0]) waiting[1]();
    },
    error: (error) => {
      console.error(error);
      process.exit(1);
    },
    complete: () => {},
  },
);
for (;;) {
  const text = await (await fetch(url.replace(/\/graphql$/, '/metrics'))).text();
  if (text.split('\n').includes('tablegraph_subscriptions 1')) break;
}

// Creates one farm per name: with createFarm for one name, with createFarms for more.
async function create(...names) {
  const [query, variables, field] =
    names.length === 1
      ? ['mutation($n: String!) { createFarm(input: { name: $n }) { id } }', { n: names[0] }, 'createFarm']
      : [
          'mutation($input: [CreateFarmInput!]!) { createFarms(input: $input) { id } }',
          { input: names.map((name) => ({ name })) },
          'createFarms',
        ];
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  if (!body.data?.[field]) throw new Error(JSON.stringify(body));
}

function until(count) {
  if (seen >= count) return Promise.resolve();
  return new Promise((resolve) => {
    waiting = [count, resolve];
  });
}

let written = 0;
const percentile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(2));
};

async function timedWindows(idle = 0) {
  for (let rep = 0; rep < reps; rep += 1) await timedWindow(idle);
}

async function timedWindow(idle = 0) {
  const before = written;
  const answered = new Map();
  const latencies = [];
  for (let i = 0; i < window; i += 1) {
    const name = `T ${run} ${before} ${i}`;
    const start = performance.now();
    await create(name);
    const end = performance.now();
    latencies.push(end - start);
    answered.set(name, end);
    written += 1;
  }
  await until(written);
  const delays = [...answered].map(([name, at]) => Math.max(0, arrived.get(name) - at));
  console.log(
    JSON.stringify({
      farms_before: before,
      idle_s: idle,
      writes: window,
      write_p50_ms: percentile(latencies, 0.5),
      write_p99_ms: percentile(latencies, 0.99),
      event_p50_ms: percentile(delays, 0.5),
      event_p99_ms: percentile(delays, 0.99),
    }),
  );
}

await timedWindows();
let next = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    for (;;) {
      const n = next;
      next += batch;
      if (n >= fill) return;
      const names = [];
      for (let i = n; i < Math.min(n + batch, fill); i += 1) names.push(`F ${run} ${i}`);
      await create(...names);
      written += names.length;
    }
  }),
);
await until(written);
await timedWindows();
if (settle > 0) {
  await new Promise((resolve) => {
    setTimeout(resolve, settle * 1000);
  });
  await timedWindows(settle);
}
await client.dispose();
process.exit(0);
