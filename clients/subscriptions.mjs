// Subscriptions as real clients use them: graphql-ws (the graphql-transport-ws protocol, over
// the `ws` package) and graphql-sse (both its distinct connections and its single connection
// modes), against a running tablegraph
// started by clients/run.sh with an API key and --max-event-bytes 400.
//
//   node clients/subscriptions.mjs http://127.0.0.1:8080/graphql <api key>
//
// Prints one line per check and `N passed, N failed`; exits non-zero when any failed.
import { ApolloClient, InMemoryCache, gql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { createClient as createWsClient } from 'graphql-ws';
import { createClient as createSseClient } from 'graphql-sse';
import WebSocket from 'ws';

const [url, apiKey] = process.argv.slice(2);
const wsUrl = url.replace(/^http/, 'ws');
const patience = 20_000;

async function post(query, variables = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  if (body.errors) throw new Error(`mutation failed: ${JSON.stringify(body.errors)}`);
  return body.data;
}

// A subscription is in place once its resolver ran, which neither protocol acknowledges: the
// server's /metrics tells.
async function subscriptionsOpen(count) {
  const wanted = `tablegraph_subscriptions ${count}`;
  const deadline = Date.now() + patience;
  while (Date.now() < deadline) {
    const text = await (await fetch(url.replace(/\/graphql$/, '/metrics'))).text();
    if (text.split('\n').includes(wanted)) return;
  }
  throw new Error(`the server never reported ${wanted}`);
}

function withPatience(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), patience);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function wsClient(connectionParams, closed) {
  return createWsClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    connectionParams,
    retryAttempts: 0,
    lazy: true,
    on: closed ? { closed } : {},
  });
}

function assertEqual(actual, expected, what) {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

const checks = [
  [
    'graphql-ws: a mutation over HTTP reaches a subscriber, nested fields and all',
    async () => {
      const client = wsClient({ 'x-api-key': apiKey });
      const events = client.iterate({
        query: 'subscription { onCreateCow { name farm { name } } }',
      });
      const first = events.next();
      await subscriptionsOpen(1);
      const farm = await post('mutation { createFarm(input: { name: "Ws Acres" }) { id } }');
      await post('mutation($f: ID!) { createCow(input: { name: "Daisy", farmId: $f }) { id } }', {
        f: farm.createFarm.id,
      });
      const { value } = await withPatience(first, 'the cow');
      assertEqual(value, { data: { onCreateCow: { name: 'Daisy', farm: { name: 'Ws Acres' } } } }, 'event');
      await events.return();
      await client.dispose();
      await subscriptionsOpen(0);
    },
  ],
  [
    "Apollo's GraphQLWsLink: writes made before subscribing are not delivered, the next one is",
    async () => {
      const farm = await post('mutation { createFarm(input: { name: "Before Acres" }) { id } }');
      const f = farm.createFarm.id;
      const cow = 'mutation($n: String!, $f: ID!) { createCow(input: { name: $n, farmId: $f }) { id } }';
      for (const n of ['First', 'Second', 'Third']) await post(cow, { n, f });
      const ws = wsClient({ 'x-api-key': apiKey });
      const apollo = new ApolloClient({ link: new GraphQLWsLink(ws), cache: new InMemoryCache() });
      const received = [];
      let fourth;
      const arrived = new Promise((resolve) => { fourth = resolve; });
      const subscription = apollo
        .subscribe({
          query: gql`subscription OnCow($f: ID!) { onCreateCow(farmId: $f) { name } }`,
          variables: { f },
        })
        .subscribe({
          next: ({ data }) => {
            received.push(data.onCreateCow.name);
            if (data.onCreateCow.name === 'Fourth') fourth();
          },
        });
      await subscriptionsOpen(1);
      await post(cow, { n: 'Fourth', f });
      await withPatience(arrived, 'the fourth cow');
      assertEqual(received, ['Fourth'], 'events');
      subscription.unsubscribe();
      await ws.dispose();
      await subscriptionsOpen(0);
    },
  ],
  [
    'graphql-ws: argument and enhanced filters choose the events',
    async () => {
      const client = wsClient({ 'x-api-key': apiKey });
      const byName = client.iterate({ query: 'subscription { onCreateFarm(name: "Bell Farm") { name } }' });
      const byFilter = client.iterate({
        query: 'subscription { onCreateFarm(filter: { or: [{ name: { beginsWith: "Hill" } }, { name: { eq: "Zed" } }] }) { name } }',
      });
      const [nameFirst, filterFirst] = [byName.next(), byFilter.next()];
      await subscriptionsOpen(2);
      for (const name of ['Acre Farm', 'Bell Farm', 'Hilltop Farm']) {
        await post('mutation($n: String!) { createFarm(input: { name: $n }) { id } }', { n: name });
      }
      assertEqual((await withPatience(nameFirst, 'Bell')).value, { data: { onCreateFarm: { name: 'Bell Farm' } } }, 'by name');
      assertEqual((await withPatience(filterFirst, 'Hilltop')).value, { data: { onCreateFarm: { name: 'Hilltop Farm' } } }, 'by filter');
      await byName.return();
      await byFilter.return();
      await client.dispose();
      await subscriptionsOpen(0);
    },
  ],
  [
    'graphql-ws: refused credentials close the connection with 4403',
    async () => {
      let closedWith;
      const closed = new Promise((resolve) => {
        closedWith = resolve;
      });
      const client = wsClient({ 'x-api-key': 'not-the-key' }, (event) => closedWith(event));
      const events = client.iterate({ query: 'subscription { onCreateFarm { name } }' });
      const outcome = events.next().catch((error) => error);
      const event = await withPatience(closed, 'the close');
      assertEqual(event.code, 4403, 'close code');
      await outcome;
      await client.dispose();
    },
  ],
  [
    'graphql-ws: an event over --max-event-bytes arrives as an error naming the limit',
    async () => {
      const client = wsClient({ 'x-api-key': apiKey });
      const events = client.iterate({ query: 'subscription { onCreateFarm { id name createdAt } }' });
      const first = events.next();
      await subscriptionsOpen(1);
      await post('mutation($n: String!) { createFarm(input: { name: $n }) { id } }', {
        n: `A farm ${'with a long name '.repeat(30)}`,
      });
      const { value } = await withPatience(first, 'the error');
      assertEqual(value.errors?.[0]?.extensions?.errorType, 'EventTooLarge', 'errorType');
      if (!value.errors[0].message.includes('--max-event-bytes')) throw new Error(value.errors[0].message);
      await events.return();
      await client.dispose();
      await subscriptionsOpen(0);
    },
  ],
  [
    'graphql-sse: the same subscription over Server-Sent Events',
    async () => {
      const client = createSseClient({ url, headers: { 'x-api-key': apiKey }, retryAttempts: 0 });
      const events = client.iterate({ query: 'subscription { onCreateFarm { name } }' });
      const first = events.next();
      await subscriptionsOpen(1);
      await post('mutation { createFarm(input: { name: "Sse Acres" }) { id } }');
      assertEqual((await withPatience(first, 'the farm')).value, { data: { onCreateFarm: { name: 'Sse Acres' } } }, 'event');
      await events.return();
      client.dispose();
      await subscriptionsOpen(0);
    },
  ],
  [
    'graphql-sse single connection: two subscriptions and a query share one stream',
    async () => {
      const client = createSseClient({
        url,
        headers: { 'x-api-key': apiKey },
        singleConnection: true,
        retryAttempts: 0,
      });
      const farms = client.iterate({ query: 'subscription { onCreateFarm { name } }' });
      const cows = client.iterate({
        query: 'subscription($n: String) { onCreateCow(name: $n) { name farm { name } } }',
        variables: { n: 'Single Daisy' },
      });
      const [farmFirst, cowFirst] = [farms.next(), cows.next()];
      await subscriptionsOpen(2);
      const farm = await post('mutation { createFarm(input: { name: "Single Acres" }) { id } }');
      await post('mutation($f: ID!) { createCow(input: { name: "Single Daisy", farmId: $f }) { id } }', {
        f: farm.createFarm.id,
      });
      assertEqual((await withPatience(farmFirst, 'the farm')).value, { data: { onCreateFarm: { name: 'Single Acres' } } }, 'farm event');
      assertEqual(
        (await withPatience(cowFirst, 'the cow')).value,
        { data: { onCreateCow: { name: 'Single Daisy', farm: { name: 'Single Acres' } } } },
        'cow event',
      );
      // A query runs on the same stream: one result, then complete.
      const answers = [];
      for await (const answer of client.iterate({ query: '{ farmByName(name: "Single Acres") { name } }' })) {
        answers.push(answer);
      }
      assertEqual(answers, [{ data: { farmByName: { name: 'Single Acres' } } }], 'query');
      // Stopping one subscription (DELETE ?operationId=) leaves the other running.
      await cows.return();
      await subscriptionsOpen(1);
      const next = farms.next();
      await post('mutation { createFarm(input: { name: "Single Acres Two" }) { id } }');
      assertEqual((await withPatience(next, 'the second farm')).value, { data: { onCreateFarm: { name: 'Single Acres Two' } } }, 'second farm');
      await farms.return();
      client.dispose();
      await subscriptionsOpen(0);
    },
  ],
  [
    'graphql-sse single connection: a document that does not validate answers its errors',
    async () => {
      const client = createSseClient({
        url,
        headers: { 'x-api-key': apiKey },
        singleConnection: true,
        retryAttempts: 0,
      });
      const answers = [];
      for await (const answer of client.iterate({ query: 'subscription { onCreateFarm { colour } }' })) {
        answers.push(answer);
      }
      assertEqual(answers.length, 1, 'one answer');
      if (!answers[0].errors?.[0]?.message) throw new Error(JSON.stringify(answers));
      client.dispose();
    },
  ],
  [
    'graphql-sse single connection: without the API key, the reservation is refused',
    async () => {
      const client = createSseClient({
        url,
        headers: { 'x-api-key': 'not-the-key' },
        singleConnection: true,
        retryAttempts: 0,
      });
      const outcome = await client
        .iterate({ query: 'subscription { onCreateFarm { name } }' })
        .next()
        .then(
          () => 'no error',
          (error) => error,
        );
      assertEqual(outcome?.response?.status, 401, 'status');
      client.dispose();
    },
  ],
];

let passed = 0;
let failed = 0;
for (const [name, check] of checks) {
  try {
    await check();
    passed += 1;
    console.log(`ok      ${name}`);
  } catch (error) {
    failed += 1;
    console.log(`FAILED  ${name}: ${error.stack ?? error}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
