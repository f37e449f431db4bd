// The checks of the browser scripts: `check` prints `ok` or `FAIL` with what it checked (and,
// failing, the detail, as JSON unless it is text); `finish` prints `N passed, N failed` and
// exits non-zero when any failed.

let passed = 0;
let failed = 0;

export function check(ok, what, detail = '') {
  if (ok) {
    passed += 1;
    console.log(`ok   ${what}`);
  } else {
    failed += 1;
    console.log(`FAIL ${what} ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`);
  }
}

/** Whether a check has failed so far. */
export const anyFailed = () => failed > 0;

export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
