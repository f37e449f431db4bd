// Idle subscriptions, for the server's memory per subscription: C connections of S
// subscriptions each, over graphql-transport-ws or AppSync's real-time protocol, held open
// until this process is stopped.
//
//   node clients/idle.mjs http://127.0.0.1:8080/graphql <connections> <per connection> [graphql-ws|appsync]
//
// Prints `open N` once the server counts all N subscriptions in place.
import WebSocket from 'ws';
import { realtimeSocket, startMessage } from './appsync.mjs';

const [url, connectionsArg, perArg, protocol = 'graphql-ws'] = process.argv.slice(2);
const connections = Number(connectionsArg);
const per = Number(perArg);
const QUERY = 'subscription { onCreateFarm { name } }';

function open() {
  const appsync = protocol === 'appsync';
  const socket = appsync
    ? new WebSocket(...realtimeSocket(url))
    : new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: {} })));
  socket.on('message', (text) => {
    const message = JSON.parse(String(text));
    if (message.type !== 'connection_ack') return;
    for (let i = 0; i < per; i += 1) {
      const id = String(i);
      socket.send(
        appsync
          ? startMessage(url, id, QUERY)
          : JSON.stringify({ id, type: 'subscribe', payload: { query: QUERY } }),
      );
    }
  });
  socket.on('error', (error) => {
    console.error(String(error));
    process.exit(1);
  });
}

for (let i = 0; i < connections; i += 1) open();
const wanted = `tablegraph_subscriptions ${connections * per}`;
for (;;) {
  const text = await (await fetch(url.replace(/\/graphql$/, '/metrics'))).text();
  if (text.split('\n').includes(wanted)) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
console.log(`open ${connections * per}`);
