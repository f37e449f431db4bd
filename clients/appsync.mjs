// AppSync's real-time protocol as a raw client speaks it (for the benchmark's clients): the
// socket's address and subprotocols, with the credentials-free `header` a server without
// credentials takes, and a `start` message.

/** The WebSocket of `graphqlUrl`'s real-time endpoint: its address and subprotocols. */
export function realtimeSocket(graphqlUrl) {
  const host = new URL(graphqlUrl).host;
  const header = Buffer.from(JSON.stringify({ host })).toString('base64url');
  return [`${graphqlUrl.replace(/^http/, 'ws')}/realtime`, ['graphql-ws', `header-${header}`]];
}

/** A `start` of `query` under `id`, as JSON text. */
export function startMessage(graphqlUrl, id, query) {
  const host = new URL(graphqlUrl).host;
  const data = JSON.stringify({ query, variables: {} });
  return JSON.stringify({ id, type: 'start', payload: { data, extensions: { authorization: { host } } } });
}
