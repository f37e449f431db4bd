#!/usr/bin/env python3
"""The functions of examples/functions/schema.graphql, as tablegraph calls them: each receives
Amplify's event (or, for BatchInvoke, a list of them) as a JSON POST and answers the field's
value (or a list of values, in the same order).

    python3 examples/functions/server.py [PORT]     # 9000 unless given; 0 picks a free port

Standard library only. It prints the port it listens on, then serves until stopped.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def forecast(event):
    city = event["arguments"]["city"]
    if not city.strip():
        return {"errorMessage": "a forecast needs a city", "errorType": "BadCity"}
    return {"city": city, "celsius": 21.5, "summary": f"Sunny over {city}"}


def health(events):
    # BatchInvoke: one event per sensor of the page, each with the sensor as its source.
    return [100 - 7 * len(event["source"]["name"]) % 100 for event in events]


FUNCTIONS = {"/forecast": forecast, "/health": health}


class Functions(BaseHTTPRequestHandler):
    def do_POST(self):
        function = FUNCTIONS.get(self.path)
        if function is None:
            self.send_error(404)
            return
        length = int(self.headers.get("content-length", "0"))
        answer = json.dumps(function(json.loads(self.rfile.read(length)))).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_):
        pass


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    server = ThreadingHTTPServer(("127.0.0.1", port), Functions)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
