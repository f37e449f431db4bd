"""Hostile documents: eight concurrent requests of each shape that once amplified (one argument
repeated, unknown arguments, unused variables, repeated directives, one long name, unknown
fields, unused fragments), each about 900 KB, against a fresh `serve --memory` per shape.
Prints each answer's status and size, the time, and the server's peak and final RSS.

    python3 bench/amplification.py target/release/tablegraph 4713
"""
import json, urllib.request, concurrent.futures, time, subprocess, sys, re
def doc(kind, size=900*1024):
    parts={"args":("{ farm(",lambda n:'id: "x" ',") { id } }"),
           "unknown":('{ farm(id: "x" ',lambda n:f"a{n}: 1 ",") { id } }"),
           "vars":("query(",lambda n:f"$v{n}: Int ",") { __typename }"),
           "dirs":("{ __typename ",lambda n:"@skip(if: false) ","}"),
           "fields":('{ farm(id: "x") { ',lambda n:f"a{n} ","} }"),
           "frags":("{ __typename } ",lambda n:f"fragment f{n} on Query {{ __typename }} ","")}
    if kind=="name": return "{ " + "a"*(size-10) + " }"
    head,part,tail=parts[kind]
    out=[head]; length=len(json.dumps(head+tail)); n=0
    while True:
        p=part(n); l=len(json.dumps(p))-2
        if length+l>size: break
        out.append(p); length+=l; n+=1
    out.append(tail); return "".join(out)
port=int(sys.argv[2]); binary=sys.argv[1]
def post(q):
    r=urllib.request.Request(f"http://127.0.0.1:{port}/graphql",data=json.dumps({"query":q}).encode(),headers={"content-type":"application/json"})
    try:
        with urllib.request.urlopen(r) as resp: b=resp.read(); return resp.status,len(b)
    except urllib.error.HTTPError as e: return e.code,len(e.read())
for kind in ["args","unknown","vars","dirs","name","fields","frags"]:
    q=doc(kind)
    srv=subprocess.Popen([binary,"serve","--memory","--listen",f"127.0.0.1:{port}"],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    t=time.time()
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        res=list(ex.map(post,[q]*8))
    el=time.time()-t
    st=open(f"/proc/{srv.pid}/status").read()
    hwm=re.search(r"VmHWM:\s+(\d+)",st).group(1); rss=re.search(r"VmRSS:\s+(\d+)",st).group(1)
    print(f"{kind:8} body={len(json.dumps({'query':q}))} status={res[0][0]} answer={max(r[1] for r in res)}B time={el:.2f}s peakRSS={int(hwm)//1024}MB after={int(rss)//1024}MB")
    srv.terminate(); srv.wait()
