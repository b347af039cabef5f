"""A stand-in for a model, to watch Airlock's task loop with no model server: it speaks
OpenAI chat completions with function calling on loopback, and serves a page to try it
on. Its first step clicks the button the task names in quotes; its second calls
`finish` with the page's heading. Usage: python3 examples/scripted_model.py [PORT]
(see docs/tasks.md)."""
import http.server, json, re, sys

PAGE = '<h1>Account</h1><form method="post" action="/delete"><button>Delete account</button></form>'

class Model(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # the page to try it on
        self.send(PAGE.encode(), "text/html")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/delete":  # what the page's button posts (only once a person approves)
            return self.send(b"<h1>Account deleted</h1>", "text/html")
        ask = json.loads(body)["messages"][-1]["content"]
        if "No steps taken yet." in ask:  # click the button the task names in quotes
            name = re.search(r'"([^"]+)"', ask.splitlines()[0]).group(1)
            call = ("browser_click", {"ref": re.search(r'- (\S+) button "' + re.escape(name) + '"', ask).group(1)})
        else:  # then finish, answering with the page's heading
            heading = re.search(r'heading "([^"]+)"', ask)
            call = ("finish", {"answer": heading.group(1) if heading else "done"})
        print(f"model: {call[0]} {json.dumps(call[1])}", file=sys.stderr, flush=True)
        step = {"id": "call_1", "type": "function", "function": {"name": call[0], "arguments": json.dumps(call[1])}}
        self.send(json.dumps({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [step]}}],
                              "usage": {"prompt_tokens": len(ask) // 4, "completion_tokens": 20}}).encode(), "application/json")

    def send(self, body, kind):
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8000), Model)
print(f"scripted model: http://127.0.0.1:{server.server_port}/v1/chat/completions, page: http://127.0.0.1:{server.server_port}/", flush=True)
server.serve_forever()
