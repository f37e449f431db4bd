// An Amplify Gen 2 app's own client against tablegraph serving its data model: aws-amplify v6's
// `generateClient()` from `aws-amplify/data`, configured as a Gen 2 app configures it (from
// amplify_outputs.json, whose `data.model_introspection` is the fixture's
// model-introspection.json), so that `client.models.*` writes its own operations from the model
// introspection. tablegraph serves the SDL `a.schema(...)` transformed to
// (tests/fixtures/amplify-gen2/, made by codegen/gen2.mjs) over TLS, its subscriptions over
// AppSync's real-time protocol; the certificate is trusted through NODE_EXTRA_CA_CERTS.
//
//   NODE_EXTRA_CA_CERTS=cert.pem node clients/gen2.mjs https://127.0.0.1:8443/graphql <api key> \
//        tests/fixtures/amplify-gen2/model-introspection.json
//
// Prints one line per check and `N passed, N failed`; exits non-zero when any failed.
import { readFileSync } from 'node:fs';
import { Amplify } from 'aws-amplify';
import { generateClient } from 'aws-amplify/data';
import { check, expect, finish, recordWebSockets } from './checks.mjs';

const [url, apiKey, introspection] = process.argv.slice(2);
// What the server sends on Amplify's socket, so that a check can wait for a `start_ack`.
const received = [];
recordWebSockets(received);
Amplify.configure({
  version: '1.3',
  data: {
    url,
    aws_region: 'us-east-1',
    default_authorization_type: 'API_KEY',
    authorization_types: [],
    api_key: apiKey,
    model_introspection: JSON.parse(readFileSync(introspection, 'utf8')),
  },
});
const client = generateClient();
const { Field, Plot } = client.models;

/** The answer's data, or a throw with its errors. */
function data(result) {
  expect(!result.errors?.length, JSON.stringify(result.errors));
  return result.data;
}

/** Resolves with what `look` answers once it answers something (checked every 20 ms, 20 s at most). */
function until(look, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      clearInterval(poll);
      reject(new Error(`no ${what} in 20 s`));
    }, 20_000);
    const poll = setInterval(() => {
      const found = look();
      if (found !== undefined && found !== false) {
        clearTimeout(timer);
        clearInterval(poll);
        resolve(found);
      }
    }, 20);
  });
}

/** The first of `values` (pushed by a subscription) that `predicate` accepts, once there is one. */
const first = (values, predicate, what) => until(() => values.find(predicate), what);

const run = `${Date.now()}`;
const fields = {};
await check('Gen 2 client.models: create, with an enum and a list of strings', async () => {
  for (const [name, stage, acres] of [
    ['North', 'GROWING', 12.5],
    ['Nettle', 'GROWING', 3],
    ['South', 'SEEDLING', 8],
  ]) {
    const made = data(await Field.create({ name: `${name} ${run}`, stage, acres, crops: ['oats', 'peas'] }));
    expect(made.name === `${name} ${run}` && made.stage === stage, JSON.stringify(made));
    expect(made.crops.join() === 'oats,peas' && typeof made.createdAt === 'string', JSON.stringify(made));
    fields[name] = made;
  }
});
const plots = [];
await check('Gen 2 client.models: create children naming their parent by reference', async () => {
  for (const label of ['A1', 'A2']) {
    plots.push(data(await Plot.create({ label, rows: 4, fieldId: fields.North.id })));
  }
  expect(plots.every((plot) => plot.fieldId === fields.North.id), JSON.stringify(plots));
});
await check('Gen 2 client.models: get', async () => {
  const got = data(await Field.get({ id: fields.South.id }));
  expect(got.name === `South ${run}` && got.acres === 8, JSON.stringify(got));
});
await check('Gen 2 client.models: list with a filter, a page at a time', async () => {
  const names = [];
  let nextToken = null;
  let pages = 0;
  do {
    const page = await Field.list({ filter: { name: { contains: run } }, limit: 1, nextToken });
    expect(!page.errors?.length, JSON.stringify(page.errors));
    names.push(...page.data.map((field) => field.name));
    nextToken = page.nextToken;
    pages += 1;
  } while (nextToken && pages < 10);
  expect(names.length === 3 && pages >= 3, `${pages} pages: ${names}`);
});
await check('Gen 2 client.models: update, read back', async () => {
  const updated = data(await Field.update({ id: fields.Nettle.id, acres: 4.25 }));
  expect(updated.acres === 4.25, JSON.stringify(updated));
  expect(data(await Field.get({ id: fields.Nettle.id })).acres === 4.25, 'not stored');
});
await check("Gen 2 client.models: a secondary index's query with a sort key condition", async () => {
  const found = await Field.listFieldByStageAndName({ stage: 'GROWING', name: { beginsWith: 'N' } });
  expect(!found.errors?.length, JSON.stringify(found.errors));
  const names = found.data.map((field) => field.name).filter((name) => name.endsWith(run));
  expect(names.join() === `Nettle ${run},North ${run}`, JSON.stringify(found.data));
});
await check('Gen 2 client.models: lazy loaders both ways', async () => {
  const field = data(await Field.get({ id: fields.North.id }));
  const children = await field.plots();
  expect(children.data.map((plot) => plot.label).sort().join() === 'A1,A2', JSON.stringify(children));
  const plot = data(await Plot.get({ id: plots[0].id }));
  const parent = await plot.field();
  expect(parent.data.name === `North ${run}`, JSON.stringify(parent));
});
await check('Gen 2 client.models: a selection set across the relation', async () => {
  const got = data(await Field.get({ id: fields.North.id }, { selectionSet: ['name', 'plots.label'] }));
  expect(Object.keys(got).sort().join() === 'name,plots', JSON.stringify(got));
  expect(got.plots.map((plot) => plot.label).sort().join() === 'A1,A2', JSON.stringify(got));
});
await check('Gen 2 client.models: onCreate over the real-time protocol', async () => {
  const events = [];
  const errors = [];
  const acks = received.filter((message) => message.type === 'start_ack').length;
  const subscription = Field.onCreate().subscribe({ next: (field) => events.push(field), error: (e) => errors.push(e) });
  await until(() => received.filter((message) => message.type === 'start_ack').length > acks, 'start_ack');
  const name = `Event ${run}`;
  data(await Field.create({ name, stage: 'SEEDLING' }));
  const event = await first(events, (field) => field.name === name, 'onCreate event');
  subscription.unsubscribe();
  expect(errors.length === 0, JSON.stringify(errors));
  expect(event.stage === 'SEEDLING' && event.id, JSON.stringify(event));
});
await check('Gen 2 client.models: observeQuery syncs, then sees a create', async () => {
  const snapshots = [];
  const filter = { name: { beginsWith: 'Observed' } };
  const acks = received.filter((message) => message.type === 'start_ack').length;
  const subscription = Field.observeQuery({ filter }).subscribe({ next: (snapshot) => snapshots.push(snapshot) });
  await first(snapshots, (snapshot) => snapshot.isSynced, 'synced snapshot');
  // A synced snapshot may come before its onCreate, onUpdate and onDelete are acknowledged;
  // a create made before then would reach no subscription.
  const started = () => received.filter((message) => message.type === 'start_ack').length >= acks + 3;
  await until(started, "start_ack of observeQuery's three subscriptions");
  await Field.create({ name: `Observed ${run}`, stage: 'HARVESTED' });
  const seen = await first(snapshots, (s) => s.items.some((f) => f.name === `Observed ${run}`), 'observed create');
  subscription.unsubscribe();
  expect(seen.items.every((field) => field.name.startsWith('Observed')), JSON.stringify(seen.items));
});
await check('Gen 2 client.models: delete, then get answers null', async () => {
  const deleted = data(await Plot.delete({ id: plots[1].id }));
  expect(deleted.id === plots[1].id, JSON.stringify(deleted));
  expect(data(await Plot.get({ id: plots[1].id })) === null, 'still there');
});
finish();
