// The checks of the client scripts: each prints `ok` or `FAILED` with its name, and `finish()`
// prints `N passed, N failed` and exits non-zero when any failed. `recordWebSockets` lets a
// script see the messages of AppSync's real-time protocol.
import NodeWebSocket from 'ws';

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

/**
 * Makes the global WebSocket, which AppSync's clients use (Node 20 has none of its own), one that
 * pushes each message it receives into `received` and each it sends into `sent`, parsed, so that
 * a check can wait for the protocol's messages (a `start_ack`) and look at what was sent.
 */
export function recordWebSockets(received, sent = []) {
  globalThis.WebSocket = class RecordingWebSocket extends NodeWebSocket {
    constructor(address, protocols) {
      super(address, protocols);
      this.addEventListener('message', (event) => received.push(JSON.parse(String(event.data))));
    }
    send(data) {
      sent.push(JSON.parse(String(data)));
      super.send(data);
    }
  };
}

/** Prints the tally and exits: 0 when every check passed. */
export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}
