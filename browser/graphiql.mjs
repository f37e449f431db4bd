// Drives tablegraph's GraphiQL page in headless Chromium with no network but loopback: `/`
// redirects to the page, it renders from the binary's own assets, its headers editor opens
// with `x-api-key` and no UnauthorizedException, its query editor opens on the README's first
// query, which runs and shows its
// result, the documentation explorer opens with the schema fetched with the key that was
// filled in, and a subscription over graphql-transport-ws shows an event. Every request the
// page makes goes to the server. Then a page of another origin calls the API with the headers
// Apollo Client, Amplify and trace-joining clients send, through the browser's real CORS
// preflights, and reads the answer's x-request-id.
//
//   node browser/graphiql.mjs BASE_URL API_KEY CHROMIUM
//
// Prints one line per check and `N passed, N failed`; exits 1 when a check fails.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import puppeteer from 'puppeteer-core';
import { check, finish } from './checks.mjs';

const [base, key, chromium] = process.argv.slice(2);
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const query = readme.split('```graphql\n')[1].split('```')[0];
const PATIENCE = 20000;

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: [
    '--no-sandbox',
    '--no-proxy-server',
    // No name resolves: nothing outside this machine can be reached.
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
  ],
});
const outside = [];
const pageErrors = [];
try {
  const page = await browser.newPage();
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && url.hostname !== '127.0.0.1') outside.push(request.url());
  });
  page.on('pageerror', (error) => pageErrors.push(String(error)));

  await page.goto(`${base}/`, { waitUntil: 'networkidle0', timeout: PATIENCE });
  check(page.url() === `${base}/graphql`, '/ redirects to /graphql', page.url());
  await page.waitForSelector('.graphiql-container .graphiql-query-editor .CodeMirror', {
    timeout: PATIENCE,
  });
  check(true, 'the page renders GraphiQL');

  const editors = () =>
    page.evaluate(() =>
      [...document.querySelectorAll('.CodeMirror')].map((e) => e.CodeMirror.getValue()),
    );
  check(
    (await editors()).some((text) => text.includes('"x-api-key"')),
    'the headers editor opens with x-api-key',
  );
  const opened = await page.evaluate(
    () => document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.getValue(),
  );
  check(
    opened.trim() === query.trim(),
    "the query editor opens on the README's first query, not GraphiQL's welcome text",
    opened,
  );
  const responseText = () =>
    page.evaluate(
      () => document.querySelector('.graphiql-response .CodeMirror')?.CodeMirror.getValue() ?? '',
    );
  check(
    !(await responseText()).includes('Unauthorized'),
    'without a key the page asks for no schema (no UnauthorizedException)',
    await responseText(),
  );

  // The headers editor gets the key, the query editor the README's query; then run it.
  const run = async (text) => {
    await page.evaluate(
      (key, text) => {
        const all = [...document.querySelectorAll('.CodeMirror')];
        const headers = all.find((e) => e.CodeMirror.getValue().includes('x-api-key'));
        headers.CodeMirror.setValue(JSON.stringify({ 'x-api-key': key }));
        document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.setValue(text);
      },
      key,
      text,
    );
    // GraphiQL reads the document when its debounced edit lands (and stores it then).
    await page.waitForFunction((text) => localStorage.getItem('graphiql:query') === text, {
      timeout: PATIENCE,
    }, text);
    await page.click('.graphiql-execute-button');
  };
  const response = () =>
    page.evaluate(
      () => document.querySelector('.graphiql-response .CodeMirror')?.CodeMirror.getValue() ?? '',
    );
  await run(query);
  await page.waitForFunction(
    () =>
      (document.querySelector('.graphiql-response .CodeMirror')?.CodeMirror.getValue() ?? '').includes(
        '"data"',
      ),
    { timeout: PATIENCE },
  );
  const answer = JSON.parse(await response());
  const goals = answer.data?.teamByName?.goals?.edges ?? [];
  check(
    goals.length > 0 && goals.every((edge) => edge.node.title),
    "the README's query shows its result",
    JSON.stringify(answer).slice(0, 300),
  );

  // The schema is fetched with the key once it is filled in: no re-fetch by hand.
  await page.click('[aria-label="Show Documentation Explorer"]');
  await page.waitForFunction(
    () => (document.querySelector('.graphiql-doc-explorer')?.textContent ?? '').includes('Query'),
    { timeout: PATIENCE },
  );
  check(true, 'the documentation explorer opens');

  // The headers persist (the page sends them in the socket's connection_init): give the
  // editor's debounced save a moment of its own.
  await page.waitForFunction(() => (localStorage.getItem('graphiql:headers') ?? '').includes('x-api-key'), {
    timeout: PATIENCE,
  });
  await run('subscription { onCreateFarm { name } }');
  // The subscription is open once the server counts it; then a farm is created.
  const name = `Browser Farm ${Date.now()}`;
  let delivered = false;
  for (let attempt = 0; attempt < 100 && !delivered; attempt += 1) {
    await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({
        query: 'mutation($n: String!) { createFarm(input: { name: $n }) { id } }',
        variables: { n: `${name} ${attempt}` },
      }),
    });
    delivered = await page
      .waitForFunction(
        (name) =>
          (document.querySelector('.graphiql-response .CodeMirror')?.CodeMirror.getValue() ?? '').includes(
            name,
          ),
        { timeout: 200 },
        name,
      )
      .then(() => true)
      .catch(() => false);
  }
  check(delivered, 'a subscription over graphql-transport-ws shows its event', await response());

  // A page of another origin (another port of 127.0.0.1) calls the API as a browser client
  // does: each request with headers of its own passes a real CORS preflight first.
  const other = createServer((request, reply) => {
    reply.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><title>other</title>');
  });
  await new Promise((resolve) => other.listen(0, '127.0.0.1', resolve));
  try {
    const origin = `http://127.0.0.1:${other.address().port}`;
    const foreign = await browser.newPage();
    await foreign.goto(origin, { timeout: PATIENCE });
    const outcome = await foreign.evaluate(
      async (base, key) => {
        const response = await fetch(`${base}/graphql`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-api-key': key,
            traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
            'x-request-id': 'browser-request-1',
            'apollographql-client-name': 'farm-web',
            'apollographql-client-version': '1.0.0',
            'x-amz-user-agent': 'aws-amplify/6.0.0 api/1 framework/0',
            'x-amz-date': '20261127T000000Z',
          },
          body: JSON.stringify({ query: '{ __typename }' }),
        });
        const body = await response.json();
        // graphql-sse's single connection mode: reserve, then stop an operation.
        const put = await fetch(`${base}/graphql`, { method: 'PUT', headers: { 'x-api-key': key } });
        const token = await put.text();
        const stop = await fetch(`${base}/graphql?operationId=none`, {
          method: 'DELETE',
          headers: { 'x-api-key': key, 'x-graphql-event-stream-token': token },
        });
        return {
          status: response.status,
          body,
          requestId: response.headers.get('x-request-id'),
          put: put.status,
          stop: stop.status,
        };
      },
      base,
      key,
    );
    check(
      outcome.status === 200 && outcome.body?.data?.__typename === 'Query',
      "another origin's request with Apollo's, Amplify's and trace headers passes the preflight",
      JSON.stringify(outcome),
    );
    check(outcome.requestId === 'browser-request-1', "its script reads the answer's x-request-id", JSON.stringify(outcome));
    check(outcome.put === 201 && outcome.stop === 200, 'it may PUT and DELETE graphql-sse reservations', JSON.stringify(outcome));
  } finally {
    other.close();
  }
} finally {
  await browser.close();
}
check(outside.length === 0, 'no request left the machine', outside.join(' '));
check(pageErrors.length === 0, 'the page raised no error', pageErrors.join(' '));
finish();
