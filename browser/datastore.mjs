// Drives aws-amplify v6's DataStore in headless Chromium (real IndexedDB, two browser contexts
// that share nothing) against tablegraph over TLS, serving tests/fixtures/amplify-datastore-app
// with its transform.conf.json: Note merged by AUTOMERGE, Order refused by
// OPTIMISTIC_CONCURRENCY. The page (browser/datastore-page.mjs, bundled here by esbuild) holds
// the models Amplify's generator made of the schema. Checked: a save is queried and observed in
// its own context and reaches the other; a context that goes offline (page.setOfflineMode) keeps
// writing, and its writes arrive when it comes back; both contexts update one Note and one Order
// while one is offline, and the Note ends as AppSync's AUTOMERGE rules say, while the stale Order
// write is refused (ConflictUnhandled, the server's copy handed to the app's conflict handler);
// a delete reaches the other context, and the server keeps it as a tombstone.
//
//   node browser/datastore.mjs https://HOST/graphql API_KEY CHROMIUM
//
// The server's certificate is trusted by Node (NODE_EXTRA_CA_CERTS) and accepted by the browser
// (acceptInsecureCerts). Prints one line per check and `N passed, N failed`; exits 1 when a
// check fails.
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import puppeteer from 'puppeteer-core';
import { anyFailed, check, finish } from './checks.mjs';

const [endpoint, key, chromium] = process.argv.slice(2);
const PATIENCE = 30000;

/// The server's own answer, read past DataStore.
async function graphql(query) {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify({ query }),
  });
  return response.json();
}

const bundle = await build({
  entryPoints: [fileURLToPath(new URL('./datastore-page.mjs', import.meta.url))],
  nodePaths: [fileURLToPath(new URL('./node_modules', import.meta.url))],
  bundle: true,
  format: 'esm',
  write: false,
  logLevel: 'error',
  define: { 'process.env.NODE_ENV': '"production"', global: 'globalThis' },
});
const script = bundle.outputFiles[0].text;
const site = createServer((request, response) => {
  if (request.url === '/app.js') {
    response.writeHead(200, { 'content-type': 'text/javascript' });
    response.end(script);
  } else {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end('<!doctype html><meta charset="utf-8"><title>notes</title><script type="module" src="/app.js"></script>');
  }
});
await new Promise((resolve) => site.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${site.address().port}`;

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  acceptInsecureCerts: true,
  args: [
    '--no-sandbox',
    '--no-proxy-server',
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
  ],
});
const logs = [];
/// Each context's sync queries as the page sent them, with the server's answers.
const syncs = { A: [], B: [] };
/// The `start_ack`s each context's socket received: DataStore is ready once its socket is
/// connected and its syncs are done, and may still wait for its subscriptions' acknowledgements
/// then (as against AppSync); a write made before those would reach no subscription.
const acks = { A: 0, B: 0 };
/// DataStore's subscriptions for this app: onCreate, onUpdate and onDelete of Note and Order.
const SUBSCRIPTIONS = 6;

/// A page in a browser context of its own (its own IndexedDB), DataStore started and synced.
async function open(name) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.on('console', (message) => logs.push(`${name}: ${message.type()} ${message.text()}`));
  page.on('pageerror', (error) => logs.push(`${name}: page error ${error}`));
  page.on('response', async (response) => {
    const sent = JSON.parse(response.request().postData() ?? 'null');
    if (!sent?.query?.includes('syncNotes')) return;
    syncs[name].push({ variables: sent.variables, answer: await response.json() });
  });
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  cdp.on('Network.webSocketFrameReceived', ({ response }) => {
    if (JSON.parse(response.payloadData).type === 'start_ack') acks[name] += 1;
  });
  await page.goto(origin, { waitUntil: 'load', timeout: PATIENCE });
  await page.waitForFunction(() => window.app !== undefined, { timeout: PATIENCE });
  await page.evaluate((url, apiKey) => window.app.start(url, apiKey), endpoint, key);
  await page.waitForFunction(() => window.app.ready, { timeout: PATIENCE });
  if (!(await subscribed(name, SUBSCRIPTIONS))) throw new Error(`${name}: no subscriptions`);
  return page;
}

/// Waits until context `name`'s socket has had `count` subscriptions acknowledged; false when
/// it never has.
async function subscribed(name, count) {
  const deadline = Date.now() + PATIENCE;
  while (acks[name] < count) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

const call = (page, method, ...args) =>
  page.evaluate((m, a) => window.app[m](...a), method, args);

/// Waits until `predicate(window.app, arg)` holds in the page; false when it never does.
async function until(page, predicate, arg) {
  try {
    await page.waitForFunction(
      (source, value) => new Function(`return (${source})`)()(window.app, value),
      { timeout: PATIENCE, polling: 50 },
      predicate.toString(),
      arg,
    );
    return true;
  } catch {
    return false;
  }
}

const settled = (page) => until(page, () => window.app.outboxEmpty && window.app.online);

try {
  const a = await open('A');
  const b = await open('B');
  check(true, 'DataStore starts and syncs in two browser contexts against tablegraph over TLS');

  const note = await call(a, 'save', 'Note', { title: 'first', tags: ['a'] });
  check(
    (await call(a, 'list', 'Note')).some((n) => n.id === note.id),
    'a saved Note is queried in its own context',
  );
  check(
    await until(a, (app, id) => app.observed.some((m) => m.element.id === id), note.id),
    'and observed there',
  );
  check(await settled(a), "A's outbox empties");
  const stored = (await graphql(`{ getNote(id: "${note.id}") { title _version _deleted } }`)).data;
  check(
    stored.getNote?.title === 'first' && stored.getNote._version === 1,
    'the server holds it at _version 1',
    stored,
  );
  check(
    await until(
      b,
      (app, id) => app.observed.some((m) => m.opType === 'INSERT' && m.element.id === id),
      note.id,
    ),
    'the other context observes the save',
  );
  check((await call(b, 'get', 'Note', note.id))?.title === 'first', 'and queries it');

  const order = await call(a, 'save', 'Order', { item: 'tea', total: 1 });
  check(await settled(a), 'an Order is saved');
  check(
    await until(b, (app, id) => app.observed.some((m) => m.element.id === id), order.id),
    'and reaches the other context',
  );

  // B goes offline and keeps writing; A writes the same Note and Order meanwhile.
  await b.setOfflineMode(true);
  check(await until(b, (app) => !app.online), 'DataStore sees the context go offline');
  const offline = await call(b, 'save', 'Note', { title: 'written offline' });
  await call(b, 'update', 'Note', note.id, { title: 'from B', tags: ['a', 'b'] });
  await call(b, 'update', 'Order', order.id, { total: 2 });
  check(
    (await call(b, 'get', 'Note', offline.id))?.title === 'written offline',
    'an offline context queries what it wrote',
  );
  await call(a, 'update', 'Note', note.id, { body: 'from A' });
  await call(a, 'update', 'Order', order.id, { total: 3 });
  check(await settled(a), "the online context's updates are sent");
  const before = (await graphql(`{ getNote(id: "${offline.id}") { id } }`)).data;
  check(before.getNote === null, 'nothing written offline reaches the server while offline', before);

  await b.setOfflineMode(false);
  check(await until(b, (app) => app.online), 'the context comes back online');
  check(
    await subscribed('B', 2 * SUBSCRIPTIONS),
    'and subscribes again',
    acks,
  );
  check(await settled(b), "its outbox empties");
  const delta = syncs.B.slice(1);
  const deltaIds = delta.flatMap((s) => s.answer.data.syncNotes.items.map((n) => n.id));
  check(
    syncs.B.length >= 2 &&
      !syncs.B[0].variables.lastSync &&
      delta.every((s) => s.variables.lastSync > 0) &&
      deltaIds.length > 0 &&
      deltaIds.every((id) => id === note.id),
    'coming back, it asks a delta sync since its last, answered with only the Note changed meanwhile',
    syncs.B,
  );
  check(
    await until(a, (app, id) => app.observed.some((m) => m.element.id === id), offline.id),
    'the Note it wrote offline reaches the other context',
  );

  // AUTOMERGE: B's stale update is merged into A's: a conflicting scalar keeps the server's
  // value, a list is the server's with the incoming one appended, a field B left alone is A's.
  const merged = { title: 'first', body: 'from A', tags: ['a', 'a', 'b'] };
  const isMerged = (app, [id, want]) =>
    app.observed.some(
      (m) =>
        m.element.id === id &&
        m.element.title === want.title &&
        m.element.body === want.body &&
        JSON.stringify(m.element.tags) === JSON.stringify(want.tags),
    );
  for (const [name, page] of [['B', b], ['A', a]]) {
    check(
      await until(page, isMerged, [note.id, merged]),
      `AUTOMERGE: context ${name} holds the merged Note`,
      await call(page, 'get', 'Note', note.id),
    );
  }
  const server = (await graphql(`{ getNote(id: "${note.id}") { title body tags _version } }`)).data;
  check(
    JSON.stringify(server.getNote) === JSON.stringify({ ...merged, _version: 3 }),
    'the server holds the merge at _version 3',
    server,
  );

  // OPTIMISTIC_CONCURRENCY: B's stale Order write is refused and the app's handler sees why.
  const conflicts = await b.evaluate(() => window.app.conflicts);
  check(
    conflicts.length === 1 &&
      conflicts[0].model === 'Order' &&
      conflicts[0].local.total === 2 &&
      conflicts[0].remote.total === 3 &&
      conflicts[0].remote._version === 2,
    "OPTIMISTIC_CONCURRENCY: the stale Order update is refused with the server's copy, and no Note write conflicts",
    conflicts,
  );
  check(
    (await until(
      b,
      (app, id) => app.observed.some((m) => m.element.id === id && m.element.total === 3),
      order.id,
    )) && (await call(b, 'get', 'Order', order.id))?.total === 3,
    "the context that lost keeps the server's Order",
    await call(b, 'get', 'Order', order.id),
  );

  // A delete reaches the other context; the server keeps a tombstone.
  await call(a, 'remove', 'Note', offline.id);
  check(await settled(a), 'a Note is deleted');
  check(
    await until(
      b,
      (app, id) => app.observed.some((m) => m.opType === 'DELETE' && m.element.id === id),
      offline.id,
    ),
    'the other context observes the delete',
  );
  check((await call(b, 'get', 'Note', offline.id)) === null, 'and no longer queries the Note');
  const tombstone = (
    await graphql(`{ syncNotes(lastSync: 0) { items { id _deleted _version } } }`)
  ).data;
  const kept = tombstone.syncNotes.items.find((n) => n.id === offline.id);
  check(kept?._deleted === true && kept._version === 2, 'the server keeps it as a tombstone', tombstone);
  const errors = [
    ...(await a.evaluate(() => window.app.errors)),
    ...(await b.evaluate(() => window.app.errors)),
  ];
  check(errors.length === 0, "DataStore's error handler was never called", errors);
} catch (error) {
  check(false, 'the run finished', String(error?.stack ?? error));
} finally {
  await browser.close();
  site.close();
}
if (anyFailed()) console.log(logs.slice(-60).join('\n'));
finish();
