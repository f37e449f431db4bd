// Drives tablegraph's GraphiQL page in headless Chromium with no network but loopback: `/`
// redirects to the page, it renders from the binary's own assets, its headers editor opens
// with `x-api-key`, the README's first query runs and shows its result, the documentation
// explorer opens, and a subscription over graphql-transport-ws shows an event. Every request
// the page makes goes to the server.
//
//   node browser/graphiql.mjs BASE_URL API_KEY CHROMIUM
//
// Prints one line per check and `N passed, N failed`; exits 1 when a check fails.
import { readFileSync } from 'node:fs';
import puppeteer from 'puppeteer-core';

const [base, key, chromium] = process.argv.slice(2);
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const query = readme.split('```graphql\n')[1].split('```')[0];
const PATIENCE = 20000;

let passed = 0;
let failed = 0;
function check(ok, what, detail = '') {
  if (ok) {
    passed += 1;
    console.log(`ok   ${what}`);
  } else {
    failed += 1;
    console.log(`FAIL ${what} ${detail}`);
  }
}

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

  // The schema was first fetched before the key was filled in: fetch it again, as a user does.
  await page.click('[aria-label="Re-fetch GraphQL schema"]');
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
} finally {
  await browser.close();
}
check(outside.length === 0, 'no request left the machine', outside.join(' '));
check(pageErrors.length === 0, 'the page raised no error', pageErrors.join(' '));
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
