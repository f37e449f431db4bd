// Runs every GraphQL-over-HTTP audit of the `graphql-http` package against a running server.
//
//   node audit.mjs http://127.0.0.1:8080/graphql
//
// Prints one line per audit and then `N passed, N failed`. MUST and SHOULD audits count; a
// failed MAY audit is listed as a notice. Exits 1 when any MUST or SHOULD audit fails.
// With TABLEGRAPH_API_KEY set, every request carries it as `x-api-key`.
import { serverAudits } from 'graphql-http';

const url = process.argv[2] ?? process.env.TABLEGRAPH_URL ?? 'http://127.0.0.1:8080/graphql';
const apiKey = process.env.TABLEGRAPH_API_KEY;

const fetchFn = (input, init = {}) => {
  if (!apiKey) return fetch(input, init);
  const headers = new Headers(init.headers);
  headers.set('x-api-key', apiKey);
  return fetch(input, { ...init, headers });
};

let passed = 0;
let failed = 0;
let notices = 0;
for (const audit of serverAudits({ url, fetchFn })) {
  const result = await audit.fn();
  if (result.status === 'ok') {
    passed += 1;
    console.log(`ok      ${result.id} ${result.name}`);
  } else if (result.status === 'notice') {
    notices += 1;
    console.log(`notice  ${result.id} ${result.name}: ${result.reason}`);
  } else {
    failed += 1;
    console.log(`FAILED  ${result.id} ${result.name}: ${result.reason}`);
    const body = await result.response.text().catch(() => '');
    console.log(`        answered ${result.response.status}: ${body.slice(0, 300)}`);
  }
}
console.log(`${passed} passed, ${failed} failed${notices ? ` (${notices} MAY notices)` : ''}`);
process.exit(failed === 0 ? 0 : 1);
