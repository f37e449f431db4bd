// The checks of the client scripts: each prints `ok` or `FAILED` with its name, and `finish()`
// prints `N passed, N failed` and exits non-zero when any failed.
let passed = 0;
let failed = 0;

/** Runs one named check; a throw fails it. */
export async function check(name, body) {
  try {
    await body();
    passed += 1;
    console.log(`ok      ${name}`);
  } catch (error) {
    failed += 1;
    console.log(`FAILED  ${name}: ${error?.stack ?? JSON.stringify(error)}`);
  }
}

/** Fails the check running when `condition` does not hold, saying `what`. */
export function expect(condition, what) {
  if (!condition) throw new Error(what);
}

/** Prints the tally and exits: 0 when every check passed. */
export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
